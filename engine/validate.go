package engine

import (
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/baton-sqs/baton"
)

// validChars reports whether s holds only the characters SQS allows in a
// message: #x9 | #xA | #xD | #x20-#xD7FF | #xE000-#xFFFD | #x10000-#x10FFFF,
// as valid UTF-8.
func validChars(s string) bool {
	const highs, spaces = 0x8080808080808080, 0x2020202020202020
	for i := 0; i < len(s); {
		// Eight bytes at a time while they are ASCII and none is a
		// control character: the common body, checked on every send.
		for ; i+8 <= len(s); i += 8 {
			w := uint64(s[i]) | uint64(s[i+1])<<8 | uint64(s[i+2])<<16 | uint64(s[i+3])<<24 |
				uint64(s[i+4])<<32 | uint64(s[i+5])<<40 | uint64(s[i+6])<<48 | uint64(s[i+7])<<56
			// With no high bit set, a byte below 0x20 is the only way
			// subtracting 0x20 from each byte can set its high bit.
			if w&highs != 0 || (w-spaces)&^w&highs != 0 {
				break
			}
		}
		// The next eight bytes (or the rest) one character at a time.
		for end := min(i+8, len(s)); i < end; {
			c := s[i]
			if c < utf8.RuneSelf {
				if c < 0x20 && c != '\t' && c != '\n' && c != '\r' {
					return false
				}
				i++
				continue
			}
			r, size := utf8.DecodeRuneInString(s[i:])
			if r == utf8.RuneError && size == 1 {
				return false
			}
			if r >= 0xD800 && r <= 0xDFFF || r == 0xFFFE || r == 0xFFFF {
				return false
			}
			i += size
		}
	}
	return true
}

// checkMessageAttributes validates user message attributes (docs/sqs-behaviour.md
// §4.2) and returns their size toward the message size limit.
func checkMessageAttributes(attrs map[string]baton.MessageAttribute) (int, error) {
	if len(attrs) > baton.MaxMessageAttributes {
		return 0, baton.Errorf(baton.ErrInvalidParameterValue,
			"Number of message attributes [%d] exceeds the allowed maximum [%d].", len(attrs), baton.MaxMessageAttributes)
	}
	size := 0
	for name, a := range attrs {
		if err := checkAttributeName(name); err != nil {
			return 0, err
		}
		if err := checkAttributeValue(name, a); err != nil {
			return 0, err
		}
		size += a.Size(name)
	}
	return size, nil
}

func checkAttributeName(name string) error {
	bad := func(reason string) error {
		return baton.Errorf(baton.ErrInvalidParameterValue, "Message (user) attribute name '%s' is invalid. Reason: %s", name, reason)
	}
	if name == "" || len(name) > 4*256 || utf8.RuneCountInString(name) > 256 {
		return baton.Errorf(baton.ErrInvalidParameterValue, "Message (user) attribute name must be 1 to 256 characters long.")
	}
	// Alphanumeric is any script's letters and digits: SQS accepts
	// "attr.1øßä".
	for _, r := range name {
		if !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != '-' && r != '_' && r != '.' {
			return bad("Can only include alphanumeric characters, hyphens, underscores, or dots.")
		}
	}
	lower := strings.ToLower(name)
	switch {
	case strings.HasPrefix(lower, "aws.") || strings.HasPrefix(lower, "amazon."):
		return bad("You can't use message attribute names beginning with 'AWS.' or 'Amazon.'. These strings are reserved for internal use.")
	case name[0] == '.' || name[len(name)-1] == '.':
		return bad("Message attribute names can't start or end with a period.")
	case strings.Contains(name, ".."):
		return bad("Message attribute names can't have successive periods.")
	}
	return nil
}

func checkAttributeValue(name string, a baton.MessageAttribute) error {
	if a.DataType == "" {
		return baton.Errorf(baton.ErrInvalidParameterValue, "The message attribute '%s' must contain non-empty message attribute type.", name)
	}
	base, label, _ := strings.Cut(a.DataType, ".")
	if len(a.DataType) > 256 || (base != "String" && base != "Number" && base != "Binary") ||
		(strings.Contains(a.DataType, ".") && label == "") {
		return baton.Errorf(baton.ErrInvalidParameterValue, "The type of message (user) attribute '%s' is invalid. You must use only the following supported type prefixes: Binary, Number, String.", name)
	}
	if !validChars(label) {
		return baton.Errorf(baton.ErrInvalidParameterValue, "The type of message (user) attribute '%s' contains invalid characters.", name)
	}
	switch base {
	case "Binary":
		if len(a.BinaryValue) == 0 {
			return baton.Errorf(baton.ErrInvalidParameterValue, "Message (user) attribute '%s' must contain a non-empty value of type 'Binary'.", name)
		}
	case "String", "Number":
		if a.StringValue == "" {
			return baton.Errorf(baton.ErrInvalidParameterValue, "Message (user) attribute '%s' must contain a non-empty value of type '%s'.", name, base)
		}
		if !validChars(a.StringValue) {
			return baton.Errorf(baton.ErrInvalidParameterValue, "Message (user) attribute '%s' contains invalid characters.", name)
		}
		if base == "Number" && !validNumber(a.StringValue) {
			return baton.Errorf(baton.ErrInvalidParameterValue, "Can't cast the value of message (user) attribute '%s' to a number.", name)
		}
	}
	return nil
}

// validNumber accepts a decimal number with at most 38 significant digits
// and a magnitude between 10^-128 and 10^+126.
func validNumber(s string) bool {
	mant, exp := s, 0
	if i := strings.IndexAny(s, "eE"); i >= 0 {
		n, err := strconv.Atoi(s[i+1:])
		if err != nil {
			return false
		}
		mant, exp = s[:i], n
	}
	if mant != "" && (mant[0] == '+' || mant[0] == '-') {
		mant = mant[1:]
	}
	intPart, frac, _ := strings.Cut(mant, ".")
	if intPart+frac == "" || strings.Trim(intPart+frac, "0123456789") != "" {
		return false
	}
	digits := strings.TrimLeft(intPart+frac, "0")
	if digits == "" {
		return true // zero
	}
	// The leading significant digit stands at 10^mag.
	mag := len(strings.TrimLeft(intPart, "0")) - 1 + exp
	if strings.TrimLeft(intPart, "0") == "" {
		mag = -(len(frac) - len(strings.TrimLeft(frac, "0"))) - 1 + exp
	}
	significant := strings.TrimRight(digits, "0")
	// From 10^-128 up to 10^126 itself: at 10^126 only that value.
	return len(significant) <= 38 && mag >= -128 && (mag < 126 || mag == 126 && significant == "1")
}

// checkBatchIDs applies the whole-request rules every batch action shares.
func checkBatchIDs(kind string, ids []string) error {
	if len(ids) == 0 {
		return baton.Errorf(baton.ErrEmptyBatchRequest, "There should be at least one %s in the request.", kind)
	}
	if len(ids) > baton.MaxBatchEntries {
		return baton.Errorf(baton.ErrTooManyEntriesInBatchRequest,
			"Maximum number of entries per request are %d. You have sent %d.", baton.MaxBatchEntries, len(ids))
	}
	seen := make(map[string]bool, len(ids))
	for _, id := range ids {
		if !validBatchID(id) {
			return baton.Errorf(baton.ErrInvalidBatchEntryID,
				"A batch entry id can only contain alphanumeric characters, hyphens and underscores. It can be at most 80 letters long.")
		}
		if seen[id] {
			return baton.Errorf(baton.ErrBatchEntryIdsNotDistinct, "Id %s repeated.", id)
		}
		seen[id] = true
	}
	return nil
}

func validBatchID(id string) bool {
	if id == "" || len(id) > 80 {
		return false
	}
	for i := 0; i < len(id); i++ {
		if !isNameByte(id[i]) {
			return false
		}
	}
	return true
}

// validGroupID checks a MessageGroupId or MessageDeduplicationId: 1 to 128
// alphanumeric or punctuation characters.
func validGroupID(s string) bool {
	if s == "" || len(s) > 128 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; c <= ' ' || c > '~' {
			return false
		}
	}
	return true
}
