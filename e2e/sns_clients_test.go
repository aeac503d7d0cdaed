package e2e_test

import (
	"bytes"
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha1"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestJavaScriptSDKSNS runs e2e/testdata/js/sns_check.mjs: a topic's life
// through the AWS SDK for JavaScript v3 (@aws-sdk/client-sns) and the
// envelope's signature verified by sns-validator, AWS's validator for
// Node.js, on a server serving HTTPS (the validator fetches certificates
// over HTTPS only) with a certificate Node is told to trust.
func TestJavaScriptSDKSNS(t *testing.T) {
	t.Parallel()
	script := filepath.Join(moduleRoot, "e2e", "testdata", "js", "sns_check.mjs")
	needClient(t, "the AWS SDK for JavaScript v3 and sns-validator (node, npm ci in e2e/testdata/js)", "node", "--no-warnings", script, "--probe")
	dir := t.TempDir()
	cert, key := writeLoopbackCert(t, dir)
	srv := startBatonServing(t, 30*time.Second, "--account-id", account, "--access-key-id", "AKIDBATONE2E",
		"--secret-access-key", "baton-e2e-secret", "--tls-cert", cert, "--tls-key", key)
	url := "https://" + strings.TrimPrefix(srv.URL, "http://")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", "--no-warnings", script, url)
	cmd.Dir = moduleRoot
	cmd.Env = append(clientEnv(t), "NODE_EXTRA_CA_CERTS="+cert)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("node %s %s: %v\n%s", script, url, err, out)
	}
	t.Logf("%s", out)
}

// writeLoopbackCert writes a self-signed certificate for 127.0.0.1 and its
// key into dir and returns their paths.
func writeLoopbackCert(t *testing.T, dir string) (certPath, keyPath string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "baton e2e"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, BasicConstraintsValid: true, IsCA: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certPath, keyPath = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	if err := os.WriteFile(certPath, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyPath, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		t.Fatal(err)
	}
	return certPath, keyPath
}

// TestAWSCLISNS drives SNS through the AWS CLI (`aws sns`): create a topic,
// subscribe a queue, publish, read the envelope from the queue with `aws
// sqs`, and verify its signature with the certificate at SigningCertURL.
func TestAWSCLISNS(t *testing.T) {
	t.Parallel()
	needClient(t, "the AWS CLI (aws)", "aws", "--version")
	srv := startBaton(t)
	env := clientEnv(t)
	aws := func(out any, args ...string) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, "aws", append(append([]string{"--endpoint-url", srv.URL}, args...), "--output", "json")...)
		cmd.Env = env
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err != nil {
			t.Fatalf("aws %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
		}
		if out != nil {
			if err := json.Unmarshal(stdout.Bytes(), out); err != nil {
				t.Fatalf("aws %s: output is not JSON: %v\n%s", strings.Join(args, " "), err, stdout.String())
			}
		}
	}
	var topic struct{ TopicArn string }
	aws(&topic, "sns", "create-topic", "--name", "cli-topic")
	if !strings.HasPrefix(topic.TopicArn, "arn:aws:sns:us-east-1:") || !strings.HasSuffix(topic.TopicArn, ":cli-topic") {
		t.Fatalf("create-topic: TopicArn %q", topic.TopicArn)
	}
	var queue struct{ QueueUrl string }
	aws(&queue, "sqs", "create-queue", "--queue-name", "cli-sns-env")
	var qattrs struct{ Attributes map[string]string }
	aws(&qattrs, "sqs", "get-queue-attributes", "--queue-url", queue.QueueUrl, "--attribute-names", "QueueArn")
	var sub struct{ SubscriptionArn string }
	aws(&sub, "sns", "subscribe", "--topic-arn", topic.TopicArn, "--protocol", "sqs", "--notification-endpoint", qattrs.Attributes["QueueArn"])
	if !strings.HasPrefix(sub.SubscriptionArn, topic.TopicArn+":") {
		t.Fatalf("subscribe: SubscriptionArn %q", sub.SubscriptionArn)
	}
	var subs struct {
		Subscriptions []struct{ SubscriptionArn, Protocol, Endpoint string }
	}
	aws(&subs, "sns", "list-subscriptions-by-topic", "--topic-arn", topic.TopicArn)
	if len(subs.Subscriptions) != 1 || subs.Subscriptions[0].SubscriptionArn != sub.SubscriptionArn || subs.Subscriptions[0].Endpoint != qattrs.Attributes["QueueArn"] {
		t.Errorf("list-subscriptions-by-topic: %+v", subs)
	}
	var pub struct{ MessageId string }
	aws(&pub, "sns", "publish", "--topic-arn", topic.TopicArn, "--message", "hello from the CLI", "--subject", "Hi",
		"--message-attributes", `{"kind": {"DataType": "String", "StringValue": "greeting"}}`)
	var got struct{ Messages []struct{ Body string } }
	aws(&got, "sqs", "receive-message", "--queue-url", queue.QueueUrl, "--max-number-of-messages", "10")
	if len(got.Messages) != 1 {
		t.Fatalf("receive-message: %d messages, want 1", len(got.Messages))
	}
	var envelope map[string]any
	if err := json.Unmarshal([]byte(got.Messages[0].Body), &envelope); err != nil {
		t.Fatalf("the copy is not an envelope: %v\n%s", err, got.Messages[0].Body)
	}
	for k, want := range map[string]any{"Type": "Notification", "MessageId": pub.MessageId, "TopicArn": topic.TopicArn,
		"Subject": "Hi", "Message": "hello from the CLI", "SignatureVersion": "1"} {
		if envelope[k] != want {
			t.Errorf("envelope %s = %v, want %v", k, envelope[k], want)
		}
	}
	if attrs, _ := json.Marshal(envelope["MessageAttributes"]); string(attrs) != `{"kind":{"Type":"String","Value":"greeting"}}` {
		t.Errorf("envelope MessageAttributes = %s", attrs)
	}
	verifyEnvelope(t, envelope)
}

// verifyEnvelope checks a SignatureVersion 1 envelope's signature with
// the certificate served at its SigningCertURL.
func verifyEnvelope(t *testing.T, env map[string]any) {
	t.Helper()
	resp, err := http.Get(env["SigningCertURL"].(string))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	pemBytes, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	block, _ := pem.Decode(pemBytes)
	if block == nil {
		t.Fatalf("SigningCertURL %s serves no PEM: %q", env["SigningCertURL"], pemBytes)
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	var sts strings.Builder
	for _, k := range []string{"Message", "MessageId", "Subject", "Timestamp", "TopicArn", "Type"} {
		if v, ok := env[k]; ok {
			sts.WriteString(k + "\n" + v.(string) + "\n")
		}
	}
	sig, err := base64.StdEncoding.DecodeString(env["Signature"].(string))
	if err != nil {
		t.Fatal(err)
	}
	sum := sha1.Sum([]byte(sts.String()))
	if err := rsa.VerifyPKCS1v15(cert.PublicKey.(*rsa.PublicKey), crypto.SHA1, sum[:], sig); err != nil {
		t.Errorf("the envelope's signature does not verify: %v", err)
	}
}
