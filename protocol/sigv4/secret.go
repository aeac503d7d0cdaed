package sigv4

import (
	"crypto/subtle"

	"github.com/baton-sqs/baton"
)

// VerifySecret checks an access key id and its secret presented as they
// are, as a browser sends them with HTTP Basic authentication (a browser
// cannot sign SigV4), and returns the key's credential. It accepts exactly
// the keys Verify accepts. The secret is compared in constant time. The
// errors are *baton.Error: InvalidClientTokenId for an unknown access key,
// SignatureDoesNotMatch for a wrong secret.
func (v *Verifier) VerifySecret(accessKeyID, secret string) (Credential, error) {
	c, ok := v.keys[accessKeyID]
	if !ok { // access key ids are not secret: every signed request names one
		return Credential{}, baton.Errorf(baton.ErrInvalidClientTokenID, msgUnknownKey)
	}
	if subtle.ConstantTimeCompare([]byte(secret), []byte(c.SecretAccessKey)) != 1 {
		return Credential{}, baton.Errorf(baton.ErrSignatureDoesNotMatch, "The secret access key does not match.")
	}
	return c, nil
}
