package sns

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/baton-sqs/baton/engine"
)

// A delivery is held in the internal queue (http.go) as one message: its
// job as a line of JSON, then the body it posts. A queue's message may
// hold only SQS's characters, and SNS takes others in a Subject or a
// message attribute's value (U+FFFE, U+FFFF): a delivery holding one is
// held as the line {"b64":true} and the base64 of that text, so that it is
// queued, and posted as it was published, rather than refused.

// base64Line is the job line of a delivery held in base64.
const base64Line = `{"b64":true}`

// deliveryText is a delivery as the internal queue holds it.
func deliveryText(j job, body string) (string, error) {
	meta, err := json.Marshal(j)
	if err != nil {
		return "", fmt.Errorf("sns: delivery: %w", err)
	}
	text := string(meta) + "\n" + body
	if engine.ValidMessageChars(text) {
		return text, nil
	}
	return base64Line + "\n" + base64.StdEncoding.EncodeToString([]byte(text)), nil
}

// readDelivery reads a delivery the internal queue held (deliveryText).
func readDelivery(text string) (job, string, error) {
	j, body, err := readDeliveryLine(text)
	if err != nil || !j.Base64 {
		return j, body, err
	}
	b, err := base64.StdEncoding.DecodeString(body)
	if err != nil {
		return job{}, "", fmt.Errorf("sns: delivery held in base64: %w", err)
	}
	return readDeliveryLine(string(b))
}

func readDeliveryLine(text string) (job, string, error) {
	meta, body, _ := strings.Cut(text, "\n")
	var j job
	if err := json.Unmarshal([]byte(meta), &j); err != nil {
		return job{}, "", err
	}
	return j, body, nil
}
