package sigv4

import (
	"crypto/hmac"
	"crypto/sha256"
	"sync"
)

// maxSigningKeys bounds the signing keys a Verifier keeps: one per access
// key, day, region and service in use, which is a handful. Past the bound
// the cache is emptied and refilled by the requests that follow.
const maxSigningKeys = 256

// keyScope is what a signing key is derived for, with the access key whose
// secret it comes from.
type keyScope struct{ accessKey, date, region, service, terminator string }

// signingKeys keeps the signing keys derived from a Verifier's secrets, so
// that a request costs one HMAC of its string to sign instead of five. A
// key is kept only once a request's signature matched with it: a request
// that cannot sign adds nothing.
type signingKeys struct {
	mu   sync.Mutex
	keys map[keyScope][]byte
}

// derive returns the signing key of cred's secret for scope s (SigV4's
// chain of HMACs over the date, region, service and terminator), the kept
// one if there is one, and whether it was kept.
func (c *signingKeys) derive(cred Credential, s Scope) ([]byte, keyScope, bool) {
	ks := keyScope{cred.AccessKeyID, s.Date, s.Region, s.Service, s.Terminator}
	c.mu.Lock()
	key, ok := c.keys[ks]
	c.mu.Unlock()
	if ok {
		return key, ks, true
	}
	key = hmacSHA256([]byte("AWS4"+cred.SecretAccessKey), s.Date)
	for _, part := range []string{s.Region, s.Service, s.Terminator} {
		key = hmacSHA256(key, part)
	}
	return key, ks, false
}

// keep remembers key, which a request's signature has just matched.
func (c *signingKeys) keep(ks keyScope, key []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.keys == nil || len(c.keys) >= maxSigningKeys {
		c.keys = make(map[keyScope][]byte)
	}
	c.keys[ks] = key
}

func hmacSHA256(key []byte, data string) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(data))
	return m.Sum(nil)
}
