package sigv4

import (
	"errors"
	"fmt"
	"unicode"
)

// Credential is one access key a Verifier accepts.
type Credential struct {
	AccessKeyID     string
	SecretAccessKey string
	// Account is the 12-digit account whose queues requests signed with
	// this key create, list and use.
	Account string
}

// maxAccessKeyIDLen is AWS's longest access key id.
const maxAccessKeyIDLen = 128

// Validate reports what is wrong with c, or nil. An access key id is 1 to
// 128 letters, digits, '_', '-' or '.' (so it cannot break the
// Authorization header's Credential=<id>/<scope> syntax); a secret is at
// least one printable character without spaces; an account is 12 digits,
// as AWS's are.
func (c Credential) Validate() error {
	switch {
	case c.AccessKeyID == "":
		return errors.New("the access key id is empty")
	case len(c.AccessKeyID) > maxAccessKeyIDLen:
		return fmt.Errorf("the access key id is longer than %d characters", maxAccessKeyIDLen)
	}
	for _, r := range c.AccessKeyID {
		if !isKeyIDRune(r) {
			return fmt.Errorf("the access key id %q has the character %q; use letters, digits, '_', '-' or '.'", c.AccessKeyID, r)
		}
	}
	if c.SecretAccessKey == "" {
		return fmt.Errorf("the secret access key of %s is empty", c.AccessKeyID)
	}
	for _, r := range c.SecretAccessKey {
		if r > unicode.MaxASCII || !unicode.IsPrint(r) || r == ' ' {
			return fmt.Errorf("the secret access key of %s has a space, control or non-ASCII character", c.AccessKeyID)
		}
	}
	if !isAccountID(c.Account) {
		return fmt.Errorf("the account id %q of %s is not 12 digits", c.Account, c.AccessKeyID)
	}
	return nil
}

func isKeyIDRune(r rune) bool {
	return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-' || r == '.'
}

func isAccountID(s string) bool {
	if len(s) != 12 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}
