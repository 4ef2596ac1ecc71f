// STAND-IN (acx sigstore stack): go-grpc-middleware v1 retry options. Fulcio uses them only for
// a cloud KMS client, which the loopback stack never starts; calls go through once, unretried.
package grpc_retry

import (
	"context"
	"time"

	"google.golang.org/grpc"
)

// CallOption is an inert retry option.
type CallOption struct{}

// WithMax is accepted and ignored.
func WithMax(uint) CallOption { return CallOption{} }

// WithPerRetryTimeout is accepted and ignored.
func WithPerRetryTimeout(time.Duration) CallOption { return CallOption{} }

// UnaryClientInterceptor invokes the call once.
func UnaryClientInterceptor(...CallOption) grpc.UnaryClientInterceptor {
	return func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn,
		invoke grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		return invoke(ctx, method, req, reply, cc, opts...)
	}
}
