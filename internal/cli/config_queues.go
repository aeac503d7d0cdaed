package cli

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"strings"

	"github.com/baton-sqs/baton"
	"github.com/baton-sqs/baton/engine"
	"github.com/baton-sqs/baton/sns"
	"github.com/baton-sqs/baton/store/memstore"
)

// planQueues returns queues in an order that creates every dead-letter
// queue before the queues that use it, keeping the file's order otherwise.
// A queue declared twice, a dead-letter queue not declared, and a cycle of
// dead-letter links are errors.
func planQueues(queues []QueueConfig, account string) ([]QueueConfig, error) {
	key := func(q QueueConfig) string { return q.Region + "/" + cmp.Or(q.AccountID, account) + "/" + q.Name }
	byKey := make(map[string]int, len(queues))
	for i, q := range queues {
		if j, dup := byKey[key(q)]; dup {
			return nil, fmt.Errorf("%s: queue %s is declared twice (first at %s)", q.where, q.Name, queues[j].where)
		}
		byKey[key(q)] = i
	}
	const (
		unvisited = iota
		visiting
		done
	)
	state := make([]int, len(queues))
	var order []QueueConfig
	var visit func(i int, path []string) error
	visit = func(i int, path []string) error {
		q := queues[i]
		path = append(path, q.Name)
		switch state[i] {
		case done:
			return nil
		case visiting:
			return fmt.Errorf("%s: the dead-letter queues form a cycle: %s", q.attrWhere[engine.AttrRedrivePolicy], strings.Join(path, " -> "))
		}
		state[i] = visiting
		if q.DeadLetterQueue != "" {
			j, ok := byKey[q.Region+"/"+cmp.Or(q.AccountID, account)+"/"+q.DeadLetterQueue]
			if !ok {
				return fmt.Errorf("%s: queue %s: the dead-letter queue %s is not declared in the file (in the same account and region)",
					q.attrWhere[engine.AttrRedrivePolicy], q.Name, q.DeadLetterQueue)
			}
			if err := visit(j, path); err != nil {
				return err
			}
		}
		state[i] = done
		order = append(order, q)
		return nil
	}
	for i := range queues {
		if err := visit(i, nil); err != nil {
			return nil, err
		}
	}
	return order, nil
}

// createQueues creates the declared queues through the engine, with the
// API's validation, dead-letter queues first. A queue that exists gets the
// declared attributes and tags. Each is logged as created, exists (as
// declared already) or updated (its attributes or tags changed to the
// file's). An error names the file:line of the attribute it is about, or
// else of the queue.
func createQueues(ctx context.Context, eng *engine.Engine, queues []QueueConfig, account string, log *slog.Logger) error {
	order, err := planQueues(queues, account)
	if err != nil {
		return err
	}
	for _, q := range order {
		acct := cmp.Or(q.AccountID, account)
		attrs := maps.Clone(q.Attributes)
		if attrs == nil {
			attrs = map[string]string{}
		}
		if baton.IsFIFOName(q.Name) {
			if _, ok := attrs[engine.AttrFifoQueue]; !ok {
				attrs[engine.AttrFifoQueue] = "true"
			}
		}
		if q.DeadLetterQueue != "" {
			policy, _ := json.Marshal(map[string]any{
				"deadLetterTargetArn": engine.RegionARN(cmp.Or(q.Region, eng.Region()), acct, q.DeadLetterQueue), "maxReceiveCount": q.MaxReceiveCount,
			})
			attrs[engine.AttrRedrivePolicy] = string(policy)
		}
		ref := engine.QueueRef{Region: q.Region, Account: acct, Name: q.Name}
		what, err := ensureQueue(ctx, eng, ref, attrs, q.Tags)
		if err != nil {
			return fmt.Errorf("%s: queue %s: %w", q.errorWhere(err), q.Name, err)
		}
		log.Info("config queue "+what, "queue", q.Name, "account", acct, "region", cmp.Or(q.Region, eng.Region()))
	}
	return nil
}

// ensureQueue makes the queue ref have attrs and tags, and says how:
// "created", "exists" (it had them already) or "updated".
func ensureQueue(ctx context.Context, eng *engine.Engine, ref engine.QueueRef, attrs, tags map[string]string) (string, error) {
	_, err := eng.GetQueue(ctx, ref)
	var e *baton.Error
	switch {
	case errors.As(err, &e) && e.Code == baton.ErrQueueDoesNotExist:
		_, err := eng.CreateQueue(ctx, engine.CreateQueueParams{Region: ref.Region, Account: ref.Account, Name: ref.Name, Attributes: attrs, Tags: tags})
		return "created", err
	case err != nil:
		return "", err
	}
	what := "exists"
	// CreateQueue answers the existing queue when every attribute given
	// equals its own, and QueueNameExists when one differs: then the file
	// wins.
	_, err = eng.CreateQueue(ctx, engine.CreateQueueParams{Region: ref.Region, Account: ref.Account, Name: ref.Name, Attributes: attrs})
	if errors.As(err, &e) && e.Code == baton.ErrQueueNameExists {
		delete(attrs, engine.AttrFifoQueue)
		err, what = nil, "updated"
		if len(attrs) > 0 {
			err = eng.SetQueueAttributes(ctx, ref, attrs)
		}
	}
	if err != nil || len(tags) == 0 {
		return what, err
	}
	have, err := eng.ListQueueTags(ctx, ref)
	if err != nil {
		return "", err
	}
	for k, v := range tags {
		if t, ok := have[k]; !ok || t != v {
			return "updated", eng.TagQueue(ctx, ref, tags)
		}
	}
	return what, nil
}

// errorWhere is the file:line an engine error is about: the attribute it
// names (the longest name, so that RedriveAllowPolicy is not taken for
// Policy), else the queue's declaration.
func (q QueueConfig) errorWhere(err error) string {
	msg, best := err.Error(), ""
	for name := range q.attrWhere {
		if strings.Contains(msg, name) && len(name) > len(best) {
			best = name
		}
	}
	if best != "" {
		return q.attrWhere[best]
	}
	return q.where
}

// checkQueues creates cfg's queues and topics in a scratch in-memory engine, to report
// what the real start-up would refuse.
func checkQueues(ctx context.Context, cfg ServeConfig) error {
	if len(cfg.Queues) == 0 && len(cfg.Topics) == 0 {
		return nil
	}
	store := memstore.New()
	defer store.Close()
	eng, err := engine.New(engine.Config{Store: store, Region: cfg.Region, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		return err
	}
	defer eng.Close()
	if err := createQueues(ctx, eng, cfg.Queues, cfg.AccountID, slog.New(slog.DiscardHandler)); err != nil {
		return err
	}
	return createTopics(ctx, eng, sns.ForStore(eng, store, nil), cfg.Topics, cfg.AccountID, slog.New(slog.DiscardHandler))
}
