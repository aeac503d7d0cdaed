package cli

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"net/http"
	"strings"

	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/spf13/cobra"

	"github.com/baton-sqs/baton/clock"
)

// maxAdminAnswer bounds what an admin API answer may hold: a page of a
// thousand browsed messages of the largest size, in base64, fits.
const maxAdminAnswer = 2 << 30

// adminGet GETs path (with its query) from the admin API and decodes the
// JSON answer into v. The request is signed like the SQS requests, so it
// passes when the server checks credentials, and goes through the SDK's own
// HTTP client, so that what makes the other commands reach the server
// (AWS_CA_BUNDLE for a TLS one, say) holds here too. An error answer
// becomes an error naming what, with the server's message.
func adminGet(cmd *cobra.Command, c *sqs.Client, endpoint, path, what string, v any) error {
	return adminRequest(cmd, c, http.MethodGet, endpoint+path, nil, what, v)
}

// adminPost POSTs the JSON body to path, an admin action, as adminGet
// GETs.
func adminPost(cmd *cobra.Command, c *sqs.Client, endpoint, path string, body []byte, what string, v any) error {
	return adminRequest(cmd, c, http.MethodPost, endpoint+path, body, what, v)
}

func adminRequest(cmd *cobra.Command, c *sqs.Client, method, url string, body []byte, what string, v any) error {
	ctx := cmd.Context()
	req, err := http.NewRequestWithContext(ctx, method, url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	o := c.Options()
	creds, err := o.Credentials.Retrieve(ctx)
	if err != nil {
		return fmt.Errorf("credentials: %w", err)
	}
	hash := sha256.Sum256(body)
	if err := v4.NewSigner().SignHTTP(ctx, creds, req, hex.EncodeToString(hash[:]), "sqs", o.Region, clock.System{}.Now()); err != nil {
		return fmt.Errorf("sign: %w", err)
	}
	var hc sqs.HTTPClient = http.DefaultClient
	if o.HTTPClient != nil {
		hc = o.HTTPClient
	}
	resp, err := hc.Do(req)
	if err != nil {
		return apiError(err)
	}
	defer resp.Body.Close()
	answer, err := io.ReadAll(io.LimitReader(resp.Body, maxAdminAnswer))
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		var e struct {
			Error string `json:"error"`
		}
		if json.Unmarshal(answer, &e) == nil && e.Error != "" {
			return fmt.Errorf("%s: %s", what, e.Error)
		}
		// A refused signature is the SQS API's XML error.
		var x struct {
			Code    string `xml:"Error>Code"`
			Message string `xml:"Error>Message"`
		}
		if xml.Unmarshal(answer, &x) == nil && x.Code != "" {
			return fmt.Errorf("%s: %s: %s", what, x.Code, firstLine(x.Message))
		}
		return fmt.Errorf("%s: %s: %s", what, resp.Status, strings.TrimSpace(string(answer)))
	}
	if err := json.Unmarshal(answer, v); err != nil {
		return fmt.Errorf("%s: unreadable answer: %w", what, err)
	}
	return nil
}
