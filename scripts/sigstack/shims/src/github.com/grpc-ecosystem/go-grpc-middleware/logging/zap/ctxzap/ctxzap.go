// STAND-IN (acx sigstore stack): go-grpc-middleware v1 ctxzap (a zap logger carried in a context).
package ctxzap

import (
	"context"

	"go.uber.org/zap"
)

type loggerKey struct{}

// ToContext stores a logger in the context.
func ToContext(ctx context.Context, l *zap.Logger) context.Context {
	return context.WithValue(ctx, loggerKey{}, l)
}

// Extract returns the context's logger, or a no-op logger.
func Extract(ctx context.Context) *zap.Logger {
	if l, ok := ctx.Value(loggerKey{}).(*zap.Logger); ok && l != nil {
		return l
	}
	return zap.NewNop()
}
