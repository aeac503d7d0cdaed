// Package logfilter passes on a logger's records of a least level only:
// a library's log within a program that set up its own (the default
// logger), kept to what the program's user must see.
package logfilter

import (
	"context"
	"log/slog"
)

// AtLeast is h passing on the records of level min and above only.
func AtLeast(h slog.Handler, min slog.Level) slog.Handler { return atLeast{h, min} }

type atLeast struct {
	slog.Handler
	min slog.Level
}

func (h atLeast) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= h.min && h.Handler.Enabled(ctx, l)
}

func (h atLeast) WithAttrs(attrs []slog.Attr) slog.Handler {
	return atLeast{h.Handler.WithAttrs(attrs), h.min}
}

func (h atLeast) WithGroup(name string) slog.Handler {
	return atLeast{h.Handler.WithGroup(name), h.min}
}
