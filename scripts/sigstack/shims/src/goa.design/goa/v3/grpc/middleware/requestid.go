// STAND-IN (acx sigstore stack): goa v3's gRPC request-ID interceptor (goa is not in Debian).
package middleware

import (
	"context"
	"crypto/rand"
	"encoding/base64"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
)

// RequestIDMetadataKey is the metadata key holding the request ID.
const RequestIDMetadataKey = "x-request-id"

type idSettings struct {
	useIncoming bool
	limit       int
}

// RequestIDOption configures UnaryRequestID.
type RequestIDOption func(*idSettings) *idSettings

// UseXRequestIDMetadataOption keeps an incoming x-request-id when set.
func UseXRequestIDMetadataOption(use bool) RequestIDOption {
	return func(s *idSettings) *idSettings { s.useIncoming = use; return s }
}

// XRequestMetadataLimitOption truncates an incoming ID to limit characters.
func XRequestMetadataLimitOption(limit int) RequestIDOption {
	return func(s *idSettings) *idSettings { s.limit = limit; return s }
}

// UnaryRequestID puts a request ID into the incoming metadata.
func UnaryRequestID(opts ...RequestIDOption) grpc.UnaryServerInterceptor {
	s := &idSettings{}
	for _, o := range opts {
		s = o(s)
	}
	return func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
		md, ok := metadata.FromIncomingContext(ctx)
		if ok {
			md = md.Copy()
		} else {
			md = metadata.MD{}
		}
		id := ""
		if got := md.Get(RequestIDMetadataKey); s.useIncoming && len(got) > 0 {
			id = got[0]
			if s.limit > 0 && len(id) > s.limit {
				id = id[:s.limit]
			}
		}
		if id == "" {
			b := make([]byte, 6)
			_, _ = rand.Read(b)
			id = base64.RawURLEncoding.EncodeToString(b)
		}
		md.Set(RequestIDMetadataKey, id)
		return h(metadata.NewIncomingContext(ctx, md), req)
	}
}
