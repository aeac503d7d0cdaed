package memstore_test

import (
	"testing"

	"github.com/baton-sqs/baton"
	"github.com/baton-sqs/baton/store/memstore"
	"github.com/baton-sqs/baton/store/storetest"
)

func TestStore(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T) baton.Store { return memstore.New() })
}
