# Shared by the image scripts (sourced): where buildah/podman keep their storage, and the options
# every container here needs. Storage lives in the project's build cache, never in git.
#
# - runc: crun (Debian's default) cannot create containers on cgroups v1 hybrid hosts.
# - ulimits: RUN steps and containers otherwise inherit limits the process may not raise
#   (no CAP_SYS_RESOURCE), and runc fails to apply the defaults.
capstan_cache=${CAPSTAN_CACHE:-$HOME/.cache/capstan}
images_store=${CAPSTAN_CONTAINERS:-$capstan_cache/containers}
storage_opts=(--root "$images_store/storage" --runroot "$images_store/run" --storage-driver overlay)
limit_opts=(--ulimit nofile=1024:1024 --ulimit nproc=1024:1024)

bah() { buildah "${storage_opts[@]}" "$@"; }
pod() { podman "${storage_opts[@]}" --runtime runc "$@"; }
