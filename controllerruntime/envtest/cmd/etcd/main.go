// Command etcd is etcd v3.7.3's server, built from its module so that
// envtest has an etcd binary on a machine with only Go: envtest starts it
// with etcd's own command line.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }
