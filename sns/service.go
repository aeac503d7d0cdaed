package sns

import (
	"log/slog"
	"sync"

	"github.com/baton-sqs/baton"
	"github.com/baton-sqs/baton/clock"
	"github.com/baton-sqs/baton/engine"
	"github.com/baton-sqs/baton/internal/lograte"
)

// Service implements the SNS actions. It is safe for concurrent use.
type Service struct {
	engine *engine.Engine
	store  baton.TopicStore
	clock  clock.Clock
	log    *slog.Logger
	// mu serialises this node's read-modify-write changes of attributes
	// (SetTopicAttributes, SetSubscriptionAttributes), so that two
	// concurrent calls do not overwrite each other's attribute. It holds
	// on one node only: two nodes of one PostgreSQL database changing two
	// attributes of one topic at the same instant may lose one.
	mu sync.Mutex

	// groups hold a FIFO topic's message group while one publish of it
	// is numbered, sent and recorded (fifo.go).
	groups groupLocks

	// signMu guards sig, the signer, loaded on first use (signing.go).
	signMu sync.Mutex
	sig    *signer

	// http runs the HTTP/S deliveries (http.go).
	http deliveries

	// seen keeps the recent publishes and the per-topic counts
	// (outcome.go).
	seen seen

	// queuePolicies is what the fan-out does with a queue's Policy
	// (queuepolicy.go).
	queuePolicies queuePolicies

	// records keeps what AWS would have sent the protocols Baton does
	// not deliver to (record.go).
	records deliveryLog
}

// Caller is who makes a request and where: the region it is for ("" is the
// engine's default region) and the account it acts for.
type Caller struct {
	Region  string
	Account string
}

// region is the caller's region, or the default one.
func (s *Service) region(c Caller) string {
	if c.Region == "" {
		return s.engine.Region()
	}
	return c.Region
}

// ForStore returns a Service over store if it keeps topics (it is a
// baton.TopicStore), else nil: a server then answers SNS actions as
// unknown.
func ForStore(eng *engine.Engine, store baton.Store, log *slog.Logger) *Service {
	ts, ok := store.(baton.TopicStore)
	if !ok {
		return nil
	}
	s := &Service{engine: eng, store: ts, clock: eng.Clock(), log: cmpLogger(log)}
	s.queuePolicies.logs = lograte.NewPaced(s.clock, policyLogEvery)
	s.http.running = make(chan struct{})
	go s.resumeDeliveries(s.http.running)
	return s
}

func cmpLogger(l *slog.Logger) *slog.Logger {
	if l == nil {
		return slog.Default()
	}
	return l
}
