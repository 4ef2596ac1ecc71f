// acx-refreg: go-containerregistry's registry with the OCI 1.1 Referrers API switched on.
// Built offline by scripts/install-peers.sh from Debian's Go and ggcr source packages;
// used only by the interop tests, on 127.0.0.1.
package main

import (
	"flag"
	"log"
	"net"
	"net/http"
	"os"

	"github.com/google/go-containerregistry/pkg/registry"
)

func main() {
	addr := flag.String("address", "127.0.0.1:0", "listen address")
	disk := flag.String("disk", "", "directory for blobs (default: memory)")
	flag.Parse()
	bh := registry.NewInMemoryBlobHandler()
	if *disk != "" {
		if err := os.MkdirAll(*disk, 0o755); err != nil {
			log.Fatal(err)
		}
		bh = registry.NewDiskBlobHandler(*disk)
	}
	l, err := net.Listen("tcp", *addr)
	if err != nil {
		log.Fatal(err)
	}
	log.Printf("serving on %s", l.Addr())
	log.Fatal(http.Serve(l, registry.New(registry.WithBlobHandler(bh), registry.WithReferrersSupport(true))))
}
