// STAND-IN (acx sigstore stack): the v1 root package of go-grpc-middleware, which Debian does not
// ship (its package holds v2 at this path). Only what Fulcio calls: ChainUnaryServer and the
// server-stream wrapper.
package middleware

import (
	"context"

	"google.golang.org/grpc"
)

// ChainUnaryServer composes interceptors; the first one given is the outermost.
func ChainUnaryServer(ics ...grpc.UnaryServerInterceptor) grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, final grpc.UnaryHandler) (any, error) {
		next := final
		for i := len(ics) - 1; i >= 0; i-- {
			ic, inner := ics[i], next
			next = func(c context.Context, r any) (any, error) { return ic(c, r, info, inner) }
		}
		return next(ctx, req)
	}
}

// WrappedServerStream lets an interceptor replace a stream's context.
type WrappedServerStream struct {
	grpc.ServerStream
	WrappedContext context.Context
}

// Context returns the replaced context.
func (w *WrappedServerStream) Context() context.Context { return w.WrappedContext }

// WrapServerStream wraps a stream once (an already wrapped stream is returned as is).
func WrapServerStream(s grpc.ServerStream) *WrappedServerStream {
	if w, ok := s.(*WrappedServerStream); ok {
		return w
	}
	return &WrappedServerStream{ServerStream: s, WrappedContext: s.Context()}
}
