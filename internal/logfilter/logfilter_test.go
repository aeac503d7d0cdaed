package logfilter_test

import (
	"context"
	"log/slog"
	"strings"
	"testing"

	"github.com/baton-sqs/baton/internal/logfilter"
	"github.com/baton-sqs/baton/internal/testutil/logbuf"
)

// Records under the least level are dropped, those at it and above pass,
// through loggers made With attributes and groups too.
func TestAtLeast(t *testing.T) {
	var out logbuf.Buffer
	h := logfilter.AtLeast(slog.NewTextHandler(&out, &slog.HandlerOptions{Level: slog.LevelDebug}), slog.LevelWarn)
	log := slog.New(h).With("k", "v").WithGroup("g")
	log.Info("dropped")
	log.Warn("kept", "n", 1)
	log.Error("also kept")
	got := out.String()
	if strings.Contains(got, "dropped") || !strings.Contains(got, "msg=kept k=v g.n=1") || !strings.Contains(got, "also kept") {
		t.Errorf("got:\n%s", got)
	}
	if h.Enabled(context.Background(), slog.LevelInfo) {
		t.Error("Info enabled under a least level of Warn")
	}
}
