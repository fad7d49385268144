{{/* Chart name. */}}
{{- define "capstan.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* Full name: release-chart, or fullnameOverride. */}}
{{- define "capstan.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- $name := default .Chart.Name .Values.nameOverride -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{- define "capstan.operatorName" -}}
{{- printf "%s-operator" (include "capstan.fullname" .) | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* The namespaces the operator watches, as a JSON list: watchNamespaces plus the earlier
single watchNamespace; [] means every namespace (a ClusterRole instead of Roles). */}}
{{- define "capstan.watchNamespaces" -}}
{{- $ns := .Values.operator.watchNamespaces | default list -}}
{{- if .Values.operator.watchNamespace -}}
{{- $ns = append $ns .Values.operator.watchNamespace -}}
{{- end -}}
{{- toJson ($ns | uniq) -}}
{{- end -}}

{{- define "capstan.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
app.kubernetes.io/part-of: capstan
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end -}}

{{/*
The labels of a pod template: capstan.labels without the chart's version and appVersion, so a new
chart version restarts only the pods whose spec changes (a restart of the dev Redis or Qdrant, both
Recreate, would take them away for the time of the restart on every upgrade).
*/}}
{{- define "capstan.podLabels" -}}
app.kubernetes.io/part-of: capstan
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end -}}

{{- define "capstan.operatorSelector" -}}
app.kubernetes.io/name: {{ include "capstan.name" . }}-operator
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "capstan.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "capstan.operatorName" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- default "default" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{/*
An image reference: repository@digest when a digest is set (what a release publishes: the node
pulls exactly the bytes that were tested, whatever the tag points to later), else repository:tag.
*/}}
{{- define "capstan.image" -}}
{{- if .image.digest -}}
{{- printf "%s@%s" .image.repository .image.digest -}}
{{- else -}}
{{- printf "%s:%s" .image.repository (default .root.Chart.AppVersion .image.tag) -}}
{{- end -}}
{{- end -}}

{{/* The pod spec's imagePullSecrets (the global value), nothing when there are none. */}}
{{- define "capstan.imagePullSecrets" -}}
{{- with .Values.imagePullSecrets }}
imagePullSecrets: {{ toJson . }}
{{- end }}
{{- end -}}

{{/* Redis address the gateway uses: the external one, or the dev Redis of the release. */}}
{{- define "capstan.redisUrl" -}}
{{- if .Values.redis.url -}}
{{- .Values.redis.url -}}
{{- else if .Values.redis.deploy.enabled -}}
{{- printf "redis://capstan-redis.%s.svc:6379" .Release.Namespace -}}
{{- end -}}
{{- end -}}

{{/* Qdrant address search uses: the external one, the dev Qdrant, or "" (the embedded store). */}}
{{- define "capstan.qdrantUrl" -}}
{{- if .Values.qdrant.url -}}
{{- .Values.qdrant.url -}}
{{- else if .Values.qdrant.deploy.enabled -}}
{{- printf "http://capstan-qdrant.%s.svc:6333" .Release.Namespace -}}
{{- end -}}
{{- end -}}

{{/* Claim of search's embedded store ("" with Qdrant). */}}
{{- define "capstan.searchClaim" -}}
{{- if not (include "capstan.qdrantUrl" .) -}}
{{- default "capstan-search-data" .Values.search.persistence.existingClaim -}}
{{- end -}}
{{- end -}}

{{/* storageClassName of a created claim: "" leaves the cluster default, "-" asks for none. */}}
{{- define "capstan.storageClass" -}}
{{- if eq . "-" }}
storageClassName: ""
{{- else if . }}
storageClassName: {{ . | quote }}
{{- end -}}
{{- end -}}

{{/* Pod labels of a workload the operator applies (translate/workloads.ts: selector()). */}}
{{- define "capstan.dataPlaneSelector" -}}
app.kubernetes.io/name: {{ . }}
app.kubernetes.io/part-of: capstan
{{- end -}}

{{/* Pod labels of the dev Redis / Qdrant. */}}
{{- define "capstan.depSelector" -}}
app.kubernetes.io/name: {{ .name }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
{{- end -}}

{{/*
Settings that cannot work together, refused at render time with the fix in the message (the
schema checks types; these are the rules between values).
*/}}
{{- define "capstan.validate" -}}
{{- $v := .Values -}}
{{- if ne $v.redis.mode "standalone" -}}
{{- if or $v.redis.url $v.redis.deploy.enabled -}}
{{- fail (printf "redis: mode %s takes its addresses from redis.%s; unset redis.url and redis.deploy.enabled (standalone only)" $v.redis.mode $v.redis.mode) -}}
{{- end -}}
{{- if and (eq $v.redis.mode "sentinel") (not $v.redis.sentinel.addresses) -}}
{{- fail "redis: mode sentinel needs redis.sentinel.addresses (host:port of each sentinel) and redis.sentinel.masterName" -}}
{{- end -}}
{{- if and (eq $v.redis.mode "cluster") (not $v.redis.cluster.nodes) -}}
{{- fail "redis: mode cluster needs redis.cluster.nodes (host:port of one or more seed nodes)" -}}
{{- end -}}
{{- else -}}
{{- if and $v.redis.url $v.redis.deploy.enabled -}}
{{- fail "redis: set either redis.url (your Redis) or redis.deploy.enabled=true (a development Redis), not both" -}}
{{- end -}}
{{- if not (include "capstan.redisUrl" .) -}}
{{- fail "redis: the gateway needs Redis for QPM limits shared by its replicas and for conversation history. Set redis.url=redis://<host>:6379 (password: redis.passwordSecret.name), redis.mode=sentinel or cluster with their addresses, or redis.deploy.enabled=true for a development Redis (no persistence, not for production)" -}}
{{- end -}}
{{- end -}}
{{- if and $v.qdrant.url $v.qdrant.deploy.enabled -}}
{{- fail "qdrant: set either qdrant.url (your Qdrant) or qdrant.deploy.enabled=true (a development Qdrant), not both" -}}
{{- end -}}
{{- if and $v.qdrant.caSecret.name $v.qdrant.caConfigMap.name -}}
{{- fail "qdrant: set either qdrant.caSecret.name or qdrant.caConfigMap.name (the CA bundle), not both" -}}
{{- end -}}
{{- if not (include "capstan.qdrantUrl" .) -}}
{{- if gt (int $v.search.replicas) 1 -}}
{{- fail (printf "search.replicas=%v with the embedded vector store: it is one pod's disk, so replicas would diverge. Set search.replicas=1, or use Qdrant (qdrant.url or qdrant.deploy.enabled=true)" $v.search.replicas) -}}
{{- end -}}
{{- if not $v.search.persistence.enabled -}}
{{- fail "search.persistence.enabled=false with the embedded vector store: every vector would be lost when the pod restarts. Keep persistence on (search.persistence.existingClaim or storageClass), or use Qdrant (qdrant.url or qdrant.deploy.enabled=true)" -}}
{{- end -}}
{{- end -}}
{{- if and $v.httpRoute.enabled (not $v.httpRoute.parentRefs) -}}
{{- fail "httpRoute.enabled=true needs httpRoute.parentRefs (the Gateway the route attaches to)" -}}
{{- end -}}
{{- if and $v.networkPolicy.enabled (not (include "capstan.ingressControllerNamed" .)) -}}
{{- with include "capstan.searchTrustedProxies" . -}}
{{- fail (printf "search.trustedProxies=%s while networkPolicy.ingressController names no ingress controller: search's public port then admits every pod, and any pod could put any address in X-Forwarded-For past a SearchKey's allowedCIDRs. Name your controller in networkPolicy.ingressController (namespaceSelector/podSelector, or ipBlocks for a host-network one; docs/install.md)" .) -}}
{{- end -}}
{{- if and $v.console.enabled $v.console.trustedProxies -}}
{{- fail (printf "console.trustedProxies=%s while networkPolicy.ingressController names no ingress controller: the console's port then admits every pod, and any pod could claim a new address in X-Forwarded-For for each sign-in attempt. Name your controller in networkPolicy.ingressController (docs/install.md)" (join "," $v.console.trustedProxies)) -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/*
"true" when networkPolicy.ingressController names the ingress controller (pods by label, or the
addresses of a host-network one); search's public port and the console's port then admit only it.
*/}}
{{- define "capstan.ingressControllerNamed" -}}
{{- with .Values.networkPolicy.ingressController -}}
{{- if or .namespaceSelector .podSelector .ipBlocks }}true{{ end -}}
{{- end -}}
{{- end -}}

{{/*
NetworkPolicy "from" peers of the ingress controller: its pods (namespaceSelector and podSelector
in one peer, so both must match; no namespaceSelector means any namespace) and its ipBlocks.
*/}}
{{- define "capstan.ingressControllerPeers" -}}
{{- with .Values.networkPolicy.ingressController -}}
{{- if or .namespaceSelector .podSelector }}
- namespaceSelector:
    {{- with .namespaceSelector }}
    matchLabels:
      {{- toYaml . | nindent 6 }}
    {{- else }} {}
    {{- end }}
  {{- with .podSelector }}
  podSelector:
    matchLabels:
      {{- toYaml . | nindent 6 }}
  {{- end }}
{{- end }}
{{- range .ipBlocks }}
- ipBlock:
    cidr: {{ . | quote }}
{{- end }}
{{- end -}}
{{- end -}}

{{/*
Proxies whose X-Forwarded-For search believes (CAPSTAN_TRUSTED_PROXIES): search.trustedProxies,
else the ingress controller's ipBlocks (a host-network controller connects from those addresses).
*/}}
{{- define "capstan.searchTrustedProxies" -}}
{{- .Values.search.trustedProxies | default (join "," .Values.networkPolicy.ingressController.ipBlocks) -}}
{{- end -}}

{{/* The console's trusted proxies, as search's: console.trustedProxies, else the controller's ipBlocks. */}}
{{- define "capstan.consoleTrustedProxies" -}}
{{- join "," (.Values.console.trustedProxies | default .Values.networkPolicy.ingressController.ipBlocks) -}}
{{- end -}}

{{/* A workload's pod settings in the operator's config (operator/src/config.ts podFields). */}}
{{- define "capstan.podSettings" -}}
extraEnv: {{ toJson .extraEnv }}
nodeSelector: {{ toJson .nodeSelector }}
tolerations: {{ toJson .tolerations }}
affinity: {{ toJson .affinity }}
podAnnotations: {{ toJson .podAnnotations }}
terminationGracePeriodSeconds: {{ .terminationGracePeriodSeconds }}
{{- end -}}

{{/*
The downward API's variables behind the k8s.* resource attributes and service.instance.id of a
container's traces (services/shared/src/trace-resource.ts; translate/common.ts k8sEnv renders the
data plane's). Call with (dict "deployment" <name> "container" <name>).
*/}}
{{- define "capstan.k8sEnv" -}}
- name: K8S_NAMESPACE_NAME
  valueFrom:
    fieldRef:
      fieldPath: metadata.namespace
- name: K8S_POD_NAME
  valueFrom:
    fieldRef:
      fieldPath: metadata.name
- name: K8S_POD_UID
  valueFrom:
    fieldRef:
      fieldPath: metadata.uid
- name: K8S_NODE_NAME
  valueFrom:
    fieldRef:
      fieldPath: spec.nodeName
- name: K8S_DEPLOYMENT_NAME
  value: {{ .deployment | quote }}
- name: K8S_CONTAINER_NAME
  value: {{ .container | quote }}
{{- end -}}

{{/* The standard OTEL_* variables (the operator's; translate/common.ts otelEnv renders the data plane's). */}}
{{- define "capstan.otelEnv" -}}
{{- with .otel -}}
{{- if .endpoint }}
- name: OTEL_SERVICE_NAME
  value: {{ $.service | quote }}
- name: OTEL_EXPORTER_OTLP_ENDPOINT
  value: {{ .endpoint | quote }}
{{- with .protocol }}
- name: OTEL_EXPORTER_OTLP_PROTOCOL
  value: {{ . | quote }}
{{- end }}
{{- with .resourceAttributes }}
{{- $pairs := list }}
{{- /* Values percent-encoded as the OTEL spec asks (the same bytes translate/common.ts writes for the
common characters: %, space, comma, equals sign). */}}
{{- range $k, $val := . }}{{ $pairs = append $pairs (printf "%s=%s" $k ($val | replace "%" "%25" | replace " " "%20" | replace "," "%2C" | replace "=" "%3D")) }}{{ end }}
- name: OTEL_RESOURCE_ATTRIBUTES
  value: {{ join "," $pairs | quote }}
{{- end }}
{{- with .sampler }}
- name: OTEL_TRACES_SAMPLER
  value: {{ . | quote }}
{{- end }}
{{- with .samplerArg }}
- name: OTEL_TRACES_SAMPLER_ARG
  value: {{ . | quote }}
{{- end }}
{{- end }}
{{- end -}}
{{- end -}}

{{/* Pod labels of the console. */}}
{{- define "capstan.consoleSelector" -}}
app.kubernetes.io/name: {{ include "capstan.name" . }}-console
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{/*
The data plane's Redis as the services read it (services/shared/src/redis/topology.ts): REDIS_URL
(standalone) or REDIS_MODE with the addresses, and the passwords from their Secrets. The console
keeps its sessions there; the operator gives the gateway and search the same variables.
*/}}
{{- define "capstan.redisEnv" -}}
{{- $r := .Values.redis -}}
{{- if $r.passwordSecret.name }}
- name: REDIS_PASSWORD
  valueFrom:
    secretKeyRef: {name: {{ $r.passwordSecret.name | quote }}, key: {{ $r.passwordSecret.key | quote }}}
{{- end }}
{{- if eq $r.mode "standalone" }}
- name: REDIS_URL
  value: {{ include "capstan.redisUrl" . | quote }}
{{- else }}
- name: REDIS_MODE
  value: {{ $r.mode | quote }}
{{- if eq $r.mode "sentinel" }}
- name: REDIS_SENTINELS
  value: {{ join "," $r.sentinel.addresses | quote }}
- name: REDIS_SENTINEL_MASTER
  value: {{ $r.sentinel.masterName | quote }}
{{- if $r.sentinel.passwordSecret.name }}
- name: REDIS_SENTINEL_PASSWORD
  valueFrom:
    secretKeyRef: {name: {{ $r.sentinel.passwordSecret.name | quote }}, key: {{ $r.sentinel.passwordSecret.key | quote }}}
{{- end }}
{{- else }}
- name: REDIS_CLUSTER_NODES
  value: {{ join "," $r.cluster.nodes | quote }}
{{- end }}
{{- if $r.tls }}
- name: REDIS_TLS
  value: "true"
{{- end }}
{{- end }}
{{- end -}}

{{/* The release's `helm test` Pod, admitted by the NetworkPolicies to the internal ports. */}}
{{- define "capstan.testSelector" -}}
app.kubernetes.io/name: {{ include "capstan.name" . }}-test
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}
