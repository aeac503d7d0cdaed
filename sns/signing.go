package sns

import (
	"bytes"
	"context"
	"crypto"
	"crypto/md5"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"time"
)

// signer signs envelopes as SNS does (AWS's SNS Developer Guide,
// "Verifying the signatures of Amazon SNS messages"): RSA PKCS #1 v1.5
// over SHA1 (SignatureVersion 1) or SHA256 (2) of the string to sign,
// with the key of the certificate served at SigningCertURL.
type signer struct {
	key     *rsa.PrivateKey
	certPEM []byte
	// certName is the certificate's file name,
	// SimpleNotificationService-<32 hex>.pem, as AWS names its own.
	certName string
}

// CertificatePrefix begins the path of the signing certificate,
// /SimpleNotificationService-<32 hex>.pem.
const CertificatePrefix = "/SimpleNotificationService-"

// newSigningKey makes what the store keeps as the signing key: an RSA
// key of 2,048 bits and a self-signed certificate of it, both PEM, so that
// every server of a shared store serves the very same certificate.
func newSigningKey() ([]byte, error) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: "Baton SNS message signing", Organization: []string{"Baton"}},
		NotBefore:    time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC),
		NotAfter:     time.Date(2100, 1, 1, 0, 0, 0, 0, time.UTC),
		KeyUsage:     x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	pem.Encode(&b, &pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)})
	pem.Encode(&b, &pem.Block{Type: "CERTIFICATE", Bytes: der})
	return b.Bytes(), nil
}

// parseSigningKey reads what newSigningKey made.
func parseSigningKey(b []byte) (*signer, error) {
	keyBlock, rest := pem.Decode(b)
	certBlock, _ := pem.Decode(rest)
	if keyBlock == nil || certBlock == nil || keyBlock.Type != "RSA PRIVATE KEY" || certBlock.Type != "CERTIFICATE" {
		return nil, errors.New("the stored signing key is not a key and a certificate in PEM")
	}
	key, err := x509.ParsePKCS1PrivateKey(keyBlock.Bytes)
	if err != nil {
		return nil, fmt.Errorf("signing key: %w", err)
	}
	sum := md5.Sum(certBlock.Bytes)
	return &signer{key: key, certPEM: pem.EncodeToMemory(certBlock),
		certName: CertificatePrefix[1:] + hex.EncodeToString(sum[:]) + ".pem"}, nil
}

// signer returns the service's signer, loading (or making) the store's key
// on first use.
func (s *Service) signer(ctx context.Context) (*signer, error) {
	s.signMu.Lock()
	defer s.signMu.Unlock()
	if s.sig != nil {
		return s.sig, nil
	}
	b, err := s.store.SigningKey(ctx, newSigningKey)
	if err != nil {
		return nil, storeErr(err, "signing key")
	}
	sig, err := parseSigningKey(b)
	if err != nil {
		return nil, err
	}
	s.sig = sig
	return sig, nil
}

// Certificate returns the PEM of the signing certificate if name is its
// file name (SimpleNotificationService-<hex>.pem), else ok false.
func (s *Service) Certificate(ctx context.Context, name string) (pem []byte, ok bool, err error) {
	sig, err := s.signer(ctx)
	if err != nil {
		return nil, false, err
	}
	if name != sig.certName {
		return nil, false, nil
	}
	return sig.certPEM, true, nil
}

// notificationStringToSign is what a Notification's signature covers:
// each of these members present, in this order, as "name\nvalue\n", the
// values unescaped.
func notificationStringToSign(n notification) string {
	var b bytes.Buffer
	add := func(name, value string) { b.WriteString(name + "\n" + value + "\n") }
	add("Message", n.Message)
	add("MessageId", n.MessageID)
	if n.Subject != nil {
		add("Subject", *n.Subject)
	}
	add("Timestamp", n.Timestamp.UTC().Format(timestampLayout))
	add("TopicArn", n.TopicARN)
	add("Type", "Notification")
	return b.String()
}

// sign returns the base64 signature of the string to sign under
// SignatureVersion version ("1": SHA1, "2": SHA256).
func (sig *signer) sign(stringToSign, version string) (string, error) {
	var (
		h      crypto.Hash
		digest []byte
	)
	if version == "2" {
		sum := sha256.Sum256([]byte(stringToSign))
		h, digest = crypto.SHA256, sum[:]
	} else {
		sum := sha1.Sum([]byte(stringToSign))
		h, digest = crypto.SHA1, sum[:]
	}
	s, err := rsa.SignPKCS1v15(nil, sig.key, h, digest)
	if err != nil {
		return "", err
	}
	return base64.StdEncoding.EncodeToString(s), nil
}
