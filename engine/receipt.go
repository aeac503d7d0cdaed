package engine

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"hash"
	"sync"
	"time"

	"github.com/baton-sqs/baton/internal/ids"
)

// A receipt handle names one lease: queue, message, lease epoch and the time
// the receive began (for the 12-hour ceiling). It is authenticated with an
// HMAC, so a forged or mangled handle is rejected without a lookup.
//
// Layout (before base64url): version(1) queueID(8) messageID(16) epoch(4)
// leasedAtMillis(8) mac(16).
const (
	receiptVersion = 1
	receiptBody    = 1 + 8 + 16 + 4 + 8
	receiptMAC     = 16
	receiptLen     = receiptBody + receiptMAC
)

type receipt struct {
	QueueID   uint64
	MessageID string
	Epoch     uint32
	LeasedAt  time.Time
}

type receiptCodec struct {
	key []byte
	// macs pools HMACs keyed with key. hmac.New hashes the padded key and
	// allocates three hashes every time; a reset HMAC restores its keyed
	// state from a saved copy, which is what every receive (one encode per
	// message) and delete (one decode) needs. Nil in a codec built without
	// newReceiptCodec, which then makes a new HMAC per handle.
	macs *sync.Pool
}

func newReceiptCodec(key []byte) receiptCodec {
	return receiptCodec{key: key, macs: &sync.Pool{New: func() any { return hmac.New(sha256.New, key) }}}
}

func (c receiptCodec) encode(r receipt) string {
	var b [receiptLen]byte
	b[0] = receiptVersion
	binary.BigEndian.PutUint64(b[1:], r.QueueID)
	id, _ := ids.ParseUUID(r.MessageID)
	copy(b[9:25], id[:])
	binary.BigEndian.PutUint32(b[25:], r.Epoch)
	binary.BigEndian.PutUint64(b[29:], uint64(r.LeasedAt.UnixMilli()))
	var mac [receiptMAC]byte
	copy(b[receiptBody:], c.mac(mac[:0], b[:receiptBody]))
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// decode parses and authenticates a handle; ok is false for anything this
// server did not issue.
func (c receiptCodec) decode(s string) (r receipt, ok bool) {
	if base64.RawURLEncoding.DecodedLen(len(s)) != receiptLen {
		return r, false
	}
	// Strict: a handle whose last character differs only in the unused
	// padding bits is not one this server issued.
	b, err := base64.RawURLEncoding.Strict().DecodeString(s)
	if err != nil || len(b) != receiptLen || b[0] != receiptVersion {
		return r, false
	}
	var mac [receiptMAC]byte
	if !hmac.Equal(b[receiptBody:], c.mac(mac[:0], b[:receiptBody])) {
		return r, false
	}
	var id [16]byte
	copy(id[:], b[9:25])
	return receipt{
		QueueID:   binary.BigEndian.Uint64(b[1:]),
		MessageID: ids.FormatUUID(id),
		Epoch:     binary.BigEndian.Uint32(b[25:]),
		LeasedAt:  time.UnixMilli(int64(binary.BigEndian.Uint64(b[29:]))),
	}, true
}

// mac appends the MAC of body to dst.
func (c receiptCodec) mac(dst, body []byte) []byte {
	var h hash.Hash
	if c.macs != nil {
		h = c.macs.Get().(hash.Hash)
		defer c.macs.Put(h)
		h.Reset()
	} else {
		h = hmac.New(sha256.New, c.key)
	}
	h.Write(body)
	var sum [sha256.Size]byte
	return append(dst, h.Sum(sum[:0])[:receiptMAC]...)
}
