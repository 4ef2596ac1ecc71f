// STAND-IN (acx sigstore stack): go-grpc-middleware v1 grpc_zap, unary server logging only.
package grpc_zap

import (
	"context"
	"path"
	"time"

	"github.com/grpc-ecosystem/go-grpc-middleware/logging/zap/ctxzap"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Decider says whether a finished call is logged.
type Decider func(fullMethodName string, err error) bool

// MessageProducer writes the log line of a finished call.
type MessageProducer func(ctx context.Context, msg string, level zapcore.Level, code codes.Code, err error, duration zapcore.Field)

type settings struct {
	decide  Decider
	produce MessageProducer
}

// Option configures the interceptor.
type Option func(*settings)

// WithDecider sets the Decider.
func WithDecider(d Decider) Option { return func(s *settings) { s.decide = d } }

// WithMessageProducer sets the MessageProducer.
func WithMessageProducer(p MessageProducer) Option { return func(s *settings) { s.produce = p } }

// UnaryServerInterceptor puts a per-call logger in the context and logs each finished call.
func UnaryServerInterceptor(logger *zap.Logger, opts ...Option) grpc.UnaryServerInterceptor {
	s := settings{}
	for _, o := range opts {
		o(&s)
	}
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
		began := time.Now()
		l := logger.With(zap.String("grpc.service", path.Dir(info.FullMethod)[1:]),
			zap.String("grpc.method", path.Base(info.FullMethod)))
		resp, err := h(ctxzap.ToContext(ctx, l), req)
		if s.decide != nil && !s.decide(info.FullMethod, err) {
			return resp, err
		}
		code := status.Code(err)
		took := zap.Duration("grpc.time", time.Since(began))
		msg := "finished unary call with code " + code.String()
		if s.produce != nil {
			s.produce(ctx, msg, zapcore.InfoLevel, code, err, took)
		} else {
			l.Info(msg, zap.Error(err), took)
		}
		return resp, err
	}
}
