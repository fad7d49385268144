# Sourced by build-kube-binaries.sh and build-node-binaries.sh: one definition of how a Go binary is
# built from the Go module proxy into the cache and reused.
#
# build name module-dir package output-dir version-argument version-expected [ldflags...]
# A cached binary is reused when it reports the expected version. Version strings are stamped
# with -X, as the projects' release builds do (without them kube-apiserver reports
# v0.0.0-master, which clients that check the server's version, such as helm, refuse).
build() {
  local name=$1 dir=$2 pkg=$3 out=$4 check=$5 expected=$6
  shift 6
  mkdir -p "$out"
  # Output captured whole, not piped to `grep -q`: etcd writes its version in several writes and
  # would die of SIGPIPE once grep had its match, which pipefail reports as a miss.
  local reported=""
  [ -x "$out/$name" ] && reported=$("$out/$name" "$check" 2>&1 || true)
  if [[ $reported == *"$expected"* ]]; then
    echo "$name: cached at $out/$name"
    return
  fi
  local start=$SECONDS
  echo "$name: building $pkg (this takes several minutes on 2 cores the first time)"
  (cd "$dir" && CGO_ENABLED=0 go build -buildvcs=false -trimpath -ldflags "-s -w $*" -o "$out/$name.tmp" "$pkg")
  mv "$out/$name.tmp" "$out/$name"
  echo "$name: built in $((SECONDS - start)) s -> $out/$name"
}
