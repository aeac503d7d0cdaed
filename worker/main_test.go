package worker_test

import (
	"os"
	"testing"

	"github.com/baton-sqs/baton/internal/testutil/skipnote"
)

// TestMain says in one line which tests were skipped for want of what they
// need.
func TestMain(m *testing.M) { os.Exit(skipnote.Main(m)) }
