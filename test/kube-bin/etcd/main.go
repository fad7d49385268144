// Command etcd is the etcd server, built from the published go.etcd.io/etcd/server/v3
// module so the test ground needs no release download.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }
