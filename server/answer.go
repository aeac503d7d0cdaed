package server

import (
	"context"
	"net/http"

	"github.com/baton-sqs/baton/engine/ledger"
	"github.com/baton-sqs/baton/internal/answered"
	"github.com/baton-sqs/baton/protocol"
)

// withAnswer returns ctx with an answer gathering the leases a call of op
// hands out (ledger.WithAnswer), for ReceiveMessage; else ctx, and nil.
func withAnswer(ctx context.Context, op protocol.Operation) (context.Context, *ledger.Answer) {
	if op.Name != "ReceiveMessage" {
		return ctx, nil
	}
	return ledger.WithAnswer(ctx)
}

// deliver writes a call's answer by write, within answered.Write's bound
// (set only now, after any long poll's wait): a peer that stopped reading
// holds it seconds, not until TCP gives up. When the answer hands out
// leases and reached no client (its client gone before it was written, or
// its write failing: the connection closed, cut or stalled while it was
// written), the lease ledger is told that those leases are held by no one
// (ledger.Event.ClientLeft): the client never had their receipts.
func (s *Server) deliver(ctx context.Context, w http.ResponseWriter, a *ledger.Answer, write func(http.ResponseWriter)) {
	// The client is seen once the answer is written whole, before the
	// last bytes' flush: recorded before it can read the answer and ask
	// again, on this connection or another.
	err := answered.WriteThen(ctx, w, write, func() { s.engine.AnswerWent(a) })
	if err == nil || a.Leases() == 0 {
		return
	}
	n := s.engine.AnswerLost(a)
	s.log.Debug("the answer of a receive reached no client: the leases it handed out are held by no one until they lapse",
		"request_id", requestFrom(ctx).reqID, "leases", n, "err", err)
}
