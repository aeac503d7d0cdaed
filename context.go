package baton

import "context"

type accountKey struct{}

// NewContextWithAccount returns a copy of ctx that names the account a
// request acts for: the account of the access key that signed it. Every
// queue a request names, creates or lists belongs to that account.
func NewContextWithAccount(ctx context.Context, account string) context.Context {
	return context.WithValue(ctx, accountKey{}, account)
}

// AccountFromContext returns the account set by NewContextWithAccount, or ""
// when none was set (authentication is off), in which case the caller uses
// its configured default account.
func AccountFromContext(ctx context.Context) string {
	a, _ := ctx.Value(accountKey{}).(string)
	return a
}
