package cli

import (
	"fmt"
	"log/slog"
	"net"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/baton-sqs/baton/store/pebblestore"
	"github.com/spf13/pflag"
)

// checkFlagSettings gives the values set by flags and BATON_* variables the
// checks a file's values get (checkSetting), naming where each came from.
func checkFlagSettings(flags *pflag.FlagSet) error {
	var err error
	flags.VisitAll(func(f *pflag.Flag) {
		check := settingChecks[f.Name]
		if err != nil || check == nil {
			return
		}
		from := "--" + f.Name
		if !f.Changed {
			if _, env := os.LookupEnv(envName(f)); !env {
				return // the default, or the file's value (checked as read)
			}
			from = envName(f)
		}
		if e := check(f.Value.String()); e != nil {
			err = fmt.Errorf("%s: %w", from, e)
		}
	})
	return err
}

// checkSetting checks a value for flag f: that the flag's type parses it,
// and what serve would refuse later without a line to point at.
func checkSetting(f *pflag.Flag, v string) error {
	switch f.Value.Type() {
	case "bool":
		if _, err := strconv.ParseBool(v); err != nil {
			return fmt.Errorf("%q is not true or false", v)
		}
	case "int", "int32", "int64":
		if _, err := strconv.ParseInt(v, 10, 64); err != nil {
			return fmt.Errorf("%q is not an integer", v)
		}
	case "uint", "uint32", "uint64":
		if _, err := strconv.ParseUint(v, 10, 64); err != nil {
			return fmt.Errorf("%q is not a non-negative integer", v)
		}
	case "duration":
		if _, err := time.ParseDuration(v); err != nil {
			return fmt.Errorf("%q is not a duration (like 30s or 5m)", v)
		}
	}
	if check := settingChecks[f.Name]; check != nil {
		return check(v)
	}
	return nil
}

// settingChecks validate the values of particular settings.
var settingChecks = map[string]func(string) error{
	"listen": checkListen,
	"log-level": func(v string) error {
		var l slog.Level
		if err := l.UnmarshalText([]byte(v)); err != nil {
			return fmt.Errorf("%q is not a log level (debug, info, warn, error)", v)
		}
		return nil
	},
	"account-id":    checkAccountID,
	"advertise-url": checkAdvertiseURL,
	"region":        checkRegion,
	"durability": func(v string) error {
		_, err := pebblestore.ParseDurability(v)
		return err
	},
	"store": func(v string) error {
		if !isEmbedded(v) && v != "memory" && !isPostgresURL(v) {
			return fmt.Errorf("%q is not a store; the stores are embedded, memory and postgres://…", storeName(v))
		}
		if maskedStore(v) {
			return fmt.Errorf("%q carries the password mask --print-config writes: put the real password here", v)
		}
		return nil
	},
	"secret-access-key":  checkNotMask,
	"sns-queue-policies": checkQueuePolicies,
	"max-long-polls-per-client": func(v string) error {
		if v == "0" { // the server would take 0 for its default, 100
			return fmt.Errorf("0 would allow no long poll; give a bound above 0, or a negative number for none")
		}
		return nil
	},
}

// checkListen checks a --listen address (serve's, proxy's): HOST:PORT, the
// port a number. A port alone, as other servers take it, gets the address
// on this machine's loopback that was most likely meant: a server without
// credentials serves no other.
func checkListen(v string) error {
	_, port, err := net.SplitHostPort(v)
	if err != nil {
		if _, e := strconv.ParseUint(v, 10, 16); e == nil {
			return fmt.Errorf("%q is not HOST:PORT: did you mean 127.0.0.1:%s?", v, v)
		}
		return fmt.Errorf("%q is not HOST:PORT", v)
	}
	if n, err := strconv.ParseUint(port, 10, 16); err != nil && port != "" || n > 65535 {
		return fmt.Errorf("%q: the port is not a number from 0 to 65535", v)
	}
	return nil
}

// checkNotMask refuses the mask --print-config writes for a secret, so that
// its output, read back, does not make a server whose secret is the mask.
func checkNotMask(v string) error {
	if v == secretMask {
		return fmt.Errorf("%q is the mask --print-config writes, not a secret: put the real secret here", v)
	}
	return nil
}

func checkAccountID(v string) error {
	if len(v) != 12 || strings.Trim(v, "0123456789") != "" {
		return fmt.Errorf("%q is not an account id (12 digits)", v)
	}
	return nil
}
