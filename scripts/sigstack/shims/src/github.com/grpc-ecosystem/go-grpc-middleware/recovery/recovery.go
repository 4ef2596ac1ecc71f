// STAND-IN (acx sigstore stack): go-grpc-middleware v1 panic recovery for unary servers.
package grpc_recovery

import (
	"context"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// RecoveryHandlerFuncContext turns a recovered panic into an error.
type RecoveryHandlerFuncContext func(ctx context.Context, p any) error

type settings struct{ handler RecoveryHandlerFuncContext }

// Option configures the interceptor.
type Option func(*settings)

// WithRecoveryHandlerContext sets the panic handler.
func WithRecoveryHandlerContext(h RecoveryHandlerFuncContext) Option {
	return func(s *settings) { s.handler = h }
}

// UnaryServerInterceptor answers a handler's panic with codes.Internal instead of crashing.
func UnaryServerInterceptor(opts ...Option) grpc.UnaryServerInterceptor {
	s := settings{}
	for _, o := range opts {
		o(&s)
	}
	return func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (resp any, err error) {
		defer func() {
			if p := recover(); p != nil {
				if s.handler != nil {
					err = status.Error(codes.Internal, s.handler(ctx, p).Error())
				} else {
					err = status.Errorf(codes.Internal, "panic: %v", p)
				}
			}
		}()
		return h(ctx, req)
	}
}
