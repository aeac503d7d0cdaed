package consumer

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// IdempotencyStore remembers, per key, whether work is in progress (and
// until when) or done. The in-progress record of an attempt expires with its
// lease and is renewed with it, so an attempt that dies never locks its
// message out; a completed record is kept for a TTL. Implementations:
// MemoryStore and SQLStore. Every call gets the time from the runtime's
// clock; stores never read a clock of their own.
type IdempotencyStore interface {
	// Claim takes the key for an attempt (Owner) until Until, unless it is
	// done or held by another attempt whose record has not expired.
	Claim(ctx context.Context, p ClaimParams) (ClaimResult, error)
	// Renew moves the in-progress record's expiry. It returns ErrFenced if
	// the record is no longer Owner's.
	Renew(ctx context.Context, p RenewParams) error
	// Complete marks the key done until KeepUntil. It returns ErrFenced if
	// another attempt holds the key (the caller's record expired and was
	// claimed): the epoch fences late completions.
	Complete(ctx context.Context, p CompleteParams) error
	// Abandon removes Owner's in-progress record so a retry can claim the
	// key at once. Someone else's record is left alone.
	Abandon(ctx context.Context, p AbandonParams) error
}

// ClaimParams are the arguments of Claim.
type ClaimParams struct {
	// Key names the piece of work.
	Key string
	// Owner names the attempt (message, epoch and receipt).
	Owner string
	// Epoch is the attempt's lease epoch, kept with the record.
	Epoch int64
	// Now is the runtime's time.
	Now time.Time
	// Until is when an in-progress record expires: the lease's deadline.
	Until time.Time
}

// RenewParams are the arguments of Renew.
type RenewParams struct {
	// Key and Owner name the record.
	Key, Owner string
	// Now is the runtime's time.
	Now time.Time
	// Until is the new expiry: the renewed lease's deadline.
	Until time.Time
}

// CompleteParams are the arguments of Complete.
type CompleteParams struct {
	// Key and Owner name the record.
	Key, Owner string
	// Epoch is the attempt's lease epoch.
	Epoch int64
	// Now is the runtime's time.
	Now time.Time
	// KeepUntil is when the completed record expires.
	KeepUntil time.Time
}

// AbandonParams are the arguments of Abandon.
type AbandonParams struct {
	// Key and Owner name the record.
	Key, Owner string
}

// ClaimState is what Claim found.
type ClaimState int

const (
	// Claimed: the caller now holds the key; do the work.
	Claimed ClaimState = iota + 1
	// InProgress: another attempt holds the key until ClaimResult.Until.
	InProgress
	// Completed: the work was done; skip it.
	Completed
)

// ClaimResult is Claim's answer.
type ClaimResult struct {
	// State is what Claim found.
	State ClaimState
	// Owner is the record's owner after the call.
	Owner string
	// Until is the record's expiry after the call.
	Until time.Time
}

// ErrFenced is returned by Renew and Complete when the record belongs to
// another attempt.
var ErrFenced = errors.New("consumer: idempotency record held by another attempt")

// KeyFunc derives an idempotency key from a delivery.
type KeyFunc func(d *Delivery) (string, error)

// KeyByMessageID keys on the message's identity (Delivery.ID, which
// survives the runtime's re-sends). The default.
func KeyByMessageID(d *Delivery) (string, error) { return "id:" + d.ID(), nil }

// KeyByDeduplicationID keys on a FIFO message's MessageDeduplicationId.
func KeyByDeduplicationID(d *Delivery) (string, error) {
	v := d.Message.Attributes["MessageDeduplicationId"]
	if v == "" {
		return "", errors.New("consumer: message has no MessageDeduplicationId")
	}
	return "dedup:" + v, nil
}

// KeyByBodyHash keys on the SHA-256 of the body: copies of the same payload
// sent as different messages count as one piece of work.
func KeyByBodyHash(d *Delivery) (string, error) {
	sum := sha256.Sum256([]byte(d.Body()))
	return "body:" + hex.EncodeToString(sum[:]), nil
}

type idemConfig struct {
	key KeyFunc
	ttl time.Duration
}

// IdempotencyOption configures the Idempotency middleware.
type IdempotencyOption func(*idemConfig)

// WithKey sets how keys are derived (default KeyByMessageID).
func WithKey(f KeyFunc) IdempotencyOption { return func(c *idemConfig) { c.key = f } }

// WithCompletedTTL sets how long completed records are kept (default 24 h).
// A redelivery later than that runs the handler again.
func WithCompletedTTL(d time.Duration) IdempotencyOption { return func(c *idemConfig) { c.ttl = d } }

// Idempotency is middleware that runs the handler at most once per key to
// success. Before the handler it claims the key until the lease's deadline
// (and renews the claim whenever the scheduler renews the lease). If the key
// is already done, it skips the handler and the message is deleted; if
// another live attempt holds it, the message is snoozed (NotReady) until that
// claim expires, unless that attempt works on the same message (a duplicate
// delivery): the duplicate's receipt is then left to lapse, since a snooze
// or a delete would act on the owner's message. On success it marks the key
// done (fenced: a completion from an attempt whose claim was taken over is
// refused and reported); on failure (a panic included), or when the handler
// gave the message back with Lease.Release (whatever it then returned), it
// abandons the claim so the retry may run.
func Idempotency(store IdempotencyStore, opts ...IdempotencyOption) Middleware {
	cfg := idemConfig{key: KeyByMessageID, ttl: 24 * time.Hour}
	for _, o := range opts {
		o(&cfg)
	}
	return func(next Handler) Handler {
		return HandlerFunc(func(ctx context.Context, d *Delivery) error {
			return idempotent(ctx, d, store, cfg, next)
		})
	}
}

func idempotent(ctx context.Context, d *Delivery, store IdempotencyStore, cfg idemConfig, next Handler) error {
	c := d.c
	key, err := cfg.key(d)
	if err != nil {
		return err
	}
	l := d.lease
	owner := d.ID() + "#" + strconv.FormatInt(l.epoch, 10) + "#" + shortHash(l.handle)
	now := c.clock.Now()
	res, err := store.Claim(ctx, ClaimParams{Key: key, Owner: owner, Epoch: l.epoch, Now: now, Until: l.Deadline()})
	if err != nil {
		c.observe(Event{Kind: EventError, Op: "idempotency.claim", MessageID: d.id, Err: err})
		return fmt.Errorf("consumer: idempotency claim: %w", err)
	}
	switch res.State {
	case Completed:
		c.observe(Event{Kind: EventDuplicate, MessageID: d.id, Attempt: d.Attempt()})
		return &outcome{kind: outcomeDuplicate}
	case InProgress:
		if strings.HasPrefix(res.Owner, d.ID()+"#") {
			// A duplicate delivery of the message another attempt is
			// working on: a snooze would re-send it and delete the
			// original, the owner's message, under the owner. Leave it to
			// the owner.
			return &outcome{kind: outcomeHeld}
		}
		return NotReady(max(res.Until.Sub(now), time.Second))
	}
	l.onRenew(func(ctx context.Context, deadline time.Time) {
		err := store.Renew(ctx, RenewParams{Key: key, Owner: owner, Now: c.clock.Now(), Until: deadline})
		if err != nil {
			c.observe(Event{Kind: EventError, Op: "idempotency.renew", MessageID: d.id, Err: err})
		}
	})
	sctx := context.WithoutCancel(ctx)
	abandon := func() {
		if err := store.Abandon(sctx, AbandonParams{Key: key, Owner: owner}); err != nil {
			c.observe(Event{Kind: EventError, Op: "idempotency.abandon", MessageID: d.id, Err: err})
		}
	}
	herr := func() error {
		// A panic fails the attempt (the runtime recovers it): the claim
		// goes as for a returned error, or it would hold off the retry
		// until the lease's old deadline.
		defer func() {
			if r := recover(); r != nil {
				abandon()
				panic(r)
			}
		}()
		return next.Handle(ctx, d)
	}()
	if herr != nil || l.releasedByHandler() {
		// A handler that gave its message back with Lease.Release did not
		// finish the work, whatever it returned: the message comes back
		// and must run again, not be skipped as a duplicate.
		abandon()
		return herr
	}
	done := c.clock.Now()
	err = store.Complete(sctx, CompleteParams{Key: key, Owner: owner, Epoch: l.epoch, Now: done, KeepUntil: done.Add(cfg.ttl)})
	if err != nil {
		c.observe(Event{Kind: EventError, Op: "idempotency.complete", MessageID: d.id, Err: err})
	}
	return nil
}

func shortHash(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:6])
}
