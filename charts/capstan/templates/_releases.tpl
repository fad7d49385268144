{{/*
Side-by-side releases. Two operators that watch the same namespace would both reconcile (and
overwrite) the same AccessChannels, Agents, KnowledgeBases, Scrapers and SearchKeys, so Capstan
does what namespace-scoped controllers do: each release owns the namespaces it watches
(operator.watchNamespaces), and no two releases may watch the same one; a release that watches
every namespace ([]) must be the only one on the cluster. The data-plane ClusterRole, which every
release with rbac.create has, carries the watched namespaces in the capstan.dev/watch-namespaces
annotation; at install and upgrade `lookup` reads those of the other releases and the render
fails on an overlap. (`helm template` and client dry-runs cannot read the cluster and skip it.)
*/}}
{{- define "capstan.watchAnnotation" -}}
capstan.dev/watch-namespaces: {{ include "capstan.watchNamespaces" . | quote }}
{{- end -}}

{{- define "capstan.refuseOverlap" -}}
{{- $mine := include "capstan.watchNamespaces" . | fromJsonArray -}}
{{- $roles := lookup "rbac.authorization.k8s.io/v1" "ClusterRole" "" "" -}}
{{- range $role := ($roles.items | default list) -}}
{{- $annotations := $role.metadata.annotations | default dict -}}
{{- $theirs := get $annotations "capstan.dev/watch-namespaces" -}}
{{- $release := get $annotations "meta.helm.sh/release-name" -}}
{{- $releaseNs := get $annotations "meta.helm.sh/release-namespace" -}}
{{- if and $theirs (not (and (eq $release $.Release.Name) (eq $releaseNs $.Release.Namespace))) -}}
{{- $other := $theirs | fromJsonArray -}}
{{- $shared := list -}}
{{- range $mine }}{{ if has . $other }}{{ $shared = append $shared . }}{{ end }}{{ end -}}
{{- if or (empty $mine) (empty $other) $shared -}}
{{- $what := ternary "every namespace" (printf "namespaces %s" (toJson $other)) (empty $other) -}}
{{- $want := ternary "every namespace" (printf "namespaces %s" (toJson $mine)) (empty $mine) -}}
{{- fail (printf "operator.watchNamespaces: release %s/%s already watches %s; this release would watch %s, and two operators must not reconcile the same resources. Give each release its own namespaces (docs/install.md \"Two releases side by side\")." $releaseNs $release $what $want) -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- end -}}
