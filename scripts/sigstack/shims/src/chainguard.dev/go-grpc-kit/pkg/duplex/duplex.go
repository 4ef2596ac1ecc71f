// STAND-IN (acx sigstore stack): the API of chainguard.dev/go-grpc-kit/pkg/duplex, which Debian
// does not package. Fulcio uses it only when HTTP and gRPC share one port; the stack always gives
// them separate ports, so Serve refuses instead of multiplexing.
package duplex

import (
	"context"
	"errors"
	"net"

	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
	"google.golang.org/grpc"
)

// Duplex holds a gRPC server and a gateway mux.
type Duplex struct {
	Server *grpc.Server
	MUX    *runtime.ServeMux
}

// New builds the server and mux from the options of either kind.
func New(_ int, opts ...interface{}) *Duplex {
	var so []grpc.ServerOption
	var mo []runtime.ServeMuxOption
	for _, o := range opts {
		switch v := o.(type) {
		case grpc.ServerOption:
			so = append(so, v)
		case runtime.ServeMuxOption:
			mo = append(mo, v)
		}
	}
	return &Duplex{Server: grpc.NewServer(so...), MUX: runtime.NewServeMux(mo...)}
}

// RegisterHandler is a no-op (no shared port).
func (d *Duplex) RegisterHandler(context.Context, func(context.Context, *runtime.ServeMux, string, []grpc.DialOption) error) error {
	return nil
}

// RegisterListenAndServeMetrics is a no-op.
func (d *Duplex) RegisterListenAndServeMetrics(int, bool) {}

// Serve refuses: give Fulcio distinct --port and --grpc-port.
func (d *Duplex) Serve(context.Context, net.Listener) error {
	return errors.New("one shared HTTP+gRPC port is not supported in this build; give distinct --port and --grpc-port")
}
