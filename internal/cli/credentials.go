package cli

import (
	"bufio"
	"fmt"
	"os"
	"strings"

	"github.com/baton-sqs/baton/protocol/sigv4"
)

// readCredentialsFile reads a --credentials-file: one access key per line,
//
//	# access-key-id        secret-access-key                          account-id
//	AKIDORDERSSERVICE      wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY   111111111111
//	AKIDBILLING            another-secret                             222222222222
//
// three fields separated by spaces or tabs; blank lines and lines whose first
// non-blank character is '#' are skipped. Each key sees only its account's
// queues. A malformed line is an error naming file:line and what is wrong;
// so is a key listed twice.
func readCredentialsFile(path string) ([]sigv4.Credential, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("--credentials-file: %w", err)
	}
	defer f.Close()
	var creds []sigv4.Credential
	firstLine := map[string]int{}
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		fields := strings.Fields(line)
		if len(fields) != 3 {
			return nil, fmt.Errorf("%s:%d: want 3 fields (access-key-id secret-access-key account-id), got %d", path, n, len(fields))
		}
		c := sigv4.Credential{AccessKeyID: fields[0], SecretAccessKey: fields[1], Account: fields[2]}
		if err := c.Validate(); err != nil {
			return nil, fmt.Errorf("%s:%d: %w", path, n, err)
		}
		if first, dup := firstLine[c.AccessKeyID]; dup {
			return nil, fmt.Errorf("%s:%d: the access key id %s is already listed on line %d", path, n, c.AccessKeyID, first)
		}
		firstLine[c.AccessKeyID] = n
		creds = append(creds, c)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(creds) == 0 {
		return nil, fmt.Errorf("%s: no credentials in the file", path)
	}
	return creds, nil
}
