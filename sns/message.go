package sns

import (
	"encoding/json"
	"strings"
	"unicode/utf8"

	"github.com/baton-sqs/baton"
	"github.com/baton-sqs/baton/engine"
)

// MaxPublishSize is the most bytes a publish may carry by default: the
// message and each attribute's name, type and value together. SNS kept
// 256 KiB when SQS went to 1 MiB; a topic's MaximumMessageSize changes it
// (maxsize.go).
const MaxPublishSize = 262144

// MessageAttribute is one attribute of a publish, named; a publish keeps
// its attributes in request order, which the envelope keeps.
type MessageAttribute struct {
	Name string
	baton.MessageAttribute
}

// size is what the attribute counts toward its topic's MaximumMessageSize.
func (a MessageAttribute) size() int {
	return len(a.Name) + len(a.DataType) + len(a.StringValue) + len(a.BinaryValue)
}

// checkMessageAttributes checks a publish's attributes as AWS does, with
// its codes (ParameterValueInvalid; ValidationError for a missing type)
// and texts.
// path is where AWS says the attributes are in a ValidationError
// ("messageAttributes", or a batch entry's).
func checkMessageAttributes(attrs []MessageAttribute, path string) error {
	for _, a := range attrs {
		if err := checkAttributeName(a.Name); err != nil {
			return err
		}
		if err := checkAttributeValue(a, path); err != nil {
			return err
		}
	}
	return nil
}

func valueInvalid(format string, args ...any) *baton.Error {
	return baton.Errorf(baton.ErrSNSParameterValueInvalid, format, args...)
}

func checkAttributeName(name string) error {
	switch {
	case len(name) > 256:
		return valueInvalid("Length of message attribute name must be less than 256 bytes.")
	case name == "":
		return valueInvalid("The message attribute name can not be empty.")
	case name[0] == '.':
		return valueInvalid("Invalid message attribute name starting with character '.' was found.")
	case name[len(name)-1] == '.':
		return valueInvalid("Invalid message attribute name ending with character '.' was found.")
	case strings.Contains(name, ".."):
		return valueInvalid("Message attribute name can not have successive '.' character.")
	}
	for _, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-' || r == '.') {
			return valueInvalid("Invalid non-alphanumeric character '#x%X' was found in the message attribute name. "+
				"Can only include alphanumeric characters, hyphens, underscores, or dots.", r)
		}
	}
	return nil
}

func checkAttributeValue(a MessageAttribute, path string) error {
	if a.DataType == "" {
		return baton.Errorf(baton.ErrSNSValidation,
			"1 validation error detected: Value null at '%s.%s.member.dataType' failed to satisfy constraint: Member must not be null", path, a.Name)
	}
	base, label, custom := strings.Cut(a.DataType, ".")
	if base != "String" && base != "Number" && base != "Binary" || custom && label == "" {
		return valueInvalid("The message attribute '%s' has an invalid message attribute type, "+
			"the set of supported type prefixes is Binary, Number, and String.", a.Name)
	}
	field := "String"
	if base == "Binary" {
		field = "Binary"
	}
	hasString, hasBinary := a.StringValue != "", len(a.BinaryValue) > 0
	switch {
	case field == "String" && !hasString && hasBinary, field == "Binary" && !hasBinary && hasString:
		return valueInvalid("The message attribute '%s' with type '%s' must use field '%s'.", a.Name, base, field)
	case field == "String" && !hasString, field == "Binary" && !hasBinary:
		return valueInvalid("The message attribute '%s' must contain non-empty message attribute value for message attribute type '%s'.", a.Name, base)
	case base == "Number" && !engine.ValidNumber(a.StringValue):
		// AWS documents SQS's range and precision for SNS's numbers: a
		// value outside them (NaN, Infinity, 39 digits), taken, would
		// be refused by every raw subscription's queue.
		return valueInvalid("Could not cast message attribute '%s' value to number.", a.Name)
	}
	return nil
}

// checkSubject: 1 to 100 characters, no line breaks or other control
// characters.
func checkSubject(subject *string) error {
	if subject == nil {
		return nil
	}
	s := *subject
	if s == "" || utf8.RuneCountInString(s) > 100 || !utf8.ValidString(s) {
		return invalidParameter("Subject")
	}
	for _, r := range s {
		if r < 0x20 || r == 0x7f {
			return invalidParameter("Subject")
		}
	}
	return nil
}

// structured is a message published with MessageStructure=json: a body per
// protocol, and the default for the others.
type structured map[string]string

// parseStructure reads a JSON-structured message: an object whose
// "default" is a string; members whose values are not strings are ignored.
func parseStructure(msg string) (structured, error) {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal([]byte(msg), &raw); err != nil || raw == nil {
		return nil, invalidParameter("Message Structure - JSON message body failed to parse")
	}
	out := make(structured, len(raw))
	for k, v := range raw {
		var s string
		if json.Unmarshal(v, &s) == nil {
			out[k] = s
		}
	}
	if _, ok := out["default"]; !ok {
		return nil, invalidParameter("Message Structure - No default entry in JSON message body")
	}
	return out, nil
}

// forProtocol is the body a subscription of protocol gets.
func (s structured) forProtocol(protocol string) string {
	if m, ok := s[protocol]; ok {
		return m
	}
	return s["default"]
}

// validID: 1 to 128 alphanumeric and punctuation characters, as a
// MessageGroupId or MessageDeduplicationId must be.
func validID(s string) bool {
	if s == "" || len(s) > 128 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x21 || c > 0x7e {
			return false
		}
	}
	return true
}

// errTooLong is the refusal of a publish over its topic's MaximumMessageSize.
func errTooLong() error { return invalidParameter("Message too long") }
