package sigv4_test

import (
	"testing"

	"github.com/baton-sqs/baton"
	"github.com/baton-sqs/baton/protocol/sigv4"
)

func TestVerifySecret(t *testing.T) {
	t.Parallel()
	alice := sigv4.Credential{AccessKeyID: "AKIDALICE", SecretAccessKey: "alice/secret+1", Account: "111111111111"}
	bob := sigv4.Credential{AccessKeyID: "AKIDBOB", SecretAccessKey: "bob-secret", Account: "222222222222"}
	v, err := sigv4.NewVerifier(nil, []sigv4.Credential{alice, bob})
	if err != nil {
		t.Fatal(err)
	}
	if got, err := v.VerifySecret(alice.AccessKeyID, alice.SecretAccessKey); err != nil || got != alice {
		t.Errorf("alice: %+v, %v", got, err)
	}
	for _, tt := range []struct {
		id, secret string
		code       baton.ErrorCode
	}{
		{alice.AccessKeyID, bob.SecretAccessKey, baton.ErrSignatureDoesNotMatch},
		{alice.AccessKeyID, alice.SecretAccessKey + "x", baton.ErrSignatureDoesNotMatch},
		{alice.AccessKeyID, "", baton.ErrSignatureDoesNotMatch},
		{"AKIDNOBODY", alice.SecretAccessKey, baton.ErrInvalidClientTokenID},
		{"", "", baton.ErrInvalidClientTokenID},
	} {
		if got, err := v.VerifySecret(tt.id, tt.secret); !baton.IsCode(err, tt.code) || got != (sigv4.Credential{}) {
			t.Errorf("VerifySecret(%q, %q) = %+v, %v; want %s", tt.id, tt.secret, got, err, tt.code)
		}
	}
}
