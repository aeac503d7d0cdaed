package cli

import (
	"fmt"
	"os"

	"github.com/baton-sqs/baton/protocol/sigv4"
	"github.com/spf13/pflag"
)

// apply sets each flag the file names to the file's value, unless the
// command line or the flag's BATON_* variable set it.
func (file *configFile) apply(flags *pflag.FlagSet) error {
	for _, s := range file.settings {
		f := flags.Lookup(s.key)
		if _, env := os.LookupEnv(envName(f)); f.Changed || env {
			continue
		}
		for _, v := range s.values {
			if err := f.Value.Set(v); err != nil {
				return fmt.Errorf("%s:%d: %s: %v", file.path, s.line, s.key, err)
			}
		}
	}
	return nil
}

// resolveCredentials returns the file's keys, those without an account-id
// acting for account.
func (file *configFile) resolveCredentials(account string) ([]sigv4.Credential, error) {
	var creds []sigv4.Credential
	for _, c := range file.creds {
		if c.Account == "" {
			c.Account = account
		}
		if err := c.Validate(); err != nil {
			return nil, fmt.Errorf("%s: credentials: %w", c.where, err)
		}
		creds = append(creds, c.Credential)
	}
	return creds, nil
}
