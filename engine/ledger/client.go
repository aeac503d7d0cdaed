package ledger

import (
	"context"
	"strings"
	"unicode/utf8"
)

// Who made a request, as the ledger records it in lease events.

// Client identifies who sent a request, for lease histories.
type Client struct {
	Addr      string
	UserAgent string
}

type clientKey struct{}

// WithClient records the requesting client in ctx. The address and user
// agent are cut to maxEventClient bytes and copied: the ledger keeps them in
// every lease event of the request, for as long as it remembers the
// message, and a user agent may be as long as the request's headers.
func WithClient(ctx context.Context, c Client) context.Context {
	c.Addr, c.UserAgent = clientString(c.Addr), clientString(c.UserAgent)
	return context.WithValue(ctx, clientKey{}, c)
}

// clientString returns s cut to at most maxEventClient bytes, on a
// character boundary, in memory of its own.
func clientString(s string) string {
	if len(s) <= maxEventClient {
		return s
	}
	n := maxEventClient
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return strings.Clone(s[:n])
}

// ClientFrom returns the client WithClient recorded in ctx, if any.
func ClientFrom(ctx context.Context) Client {
	c, _ := ctx.Value(clientKey{}).(Client)
	return c
}

type progressKey struct{}

// WithProgress records in ctx that the request's visibility changes are
// renewals its client makes because the handler reported progress (the
// client sent baton.RenewalHeader: baton.RenewalProgress).
func WithProgress(ctx context.Context) context.Context {
	return context.WithValue(ctx, progressKey{}, true)
}

// ProgressFrom says whether WithProgress marked ctx.
func ProgressFrom(ctx context.Context) bool {
	p, _ := ctx.Value(progressKey{}).(bool)
	return p
}
