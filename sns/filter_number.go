package sns

import (
	"errors"
	"math"
	"math/big"
	"strconv"
	"strings"
)

// Numbers in filter policies, as AWS documents them (Amazon SNS Developer
// Guide, "Filter policy constraints"): a policy's numbers lie within
// -10^9..10^9, and numbers compare with five digits after the decimal
// point. Baton reads every number, of a policy or of a message, as a whole
// count of 10^-5, rounded down, so that 100.123456789 equals 100.1234567
// (as AWS was seen to match them) and no two numbers equal at that
// precision compare apart through a float's rounding.

const (
	// numberBound is the largest magnitude of a policy's number.
	numberBound = 1_000_000_000
	// numberScale is the number of units in one: five decimal places.
	numberScale = 100_000
)

// errNumberBounds is Baton's refusal of a policy number out of bounds, in
// the form of AWS's matcher's refusal with SNS's documented bounds. AWS's
// own answer is not recorded: it was seen answering InternalFailure (500)
// for {"k":[1000000001]}, which Baton does not copy.
const errNumberBounds = "Value must be between -1.0E9 and 1.0E9, inclusive"

// fixedNumber is a number literal (JSON, or a Number attribute's value)
// as a count of 10^-5, rounded down; ok is false when it is not a finite
// number within the bounds. Messages' numbers beyond the bounds match no
// numeric condition.
func fixedNumber(lit string) (int64, bool) {
	if n, ok, plain := fixedDecimal(lit); plain {
		return n, ok
	}
	f, err := strconv.ParseFloat(strings.TrimSpace(lit), 64)
	if (err != nil && !errors.Is(err, strconv.ErrRange)) || math.IsInf(f, 0) || math.IsNaN(f) || math.Abs(f) > 2*numberBound {
		return 0, false
	}
	r, ok := exactNumber(lit, f)
	if !ok || r.Cmp(big.NewRat(-numberBound, 1)) < 0 || r.Cmp(big.NewRat(numberBound, 1)) > 0 {
		return 0, false
	}
	r.Mul(r, big.NewRat(numberScale, 1))
	// Euclidean division by a positive denominator rounds down.
	return new(big.Int).Div(r.Num(), r.Denom()).Int64(), true
}

// fixedDecimal is fixedNumber for a plain decimal ("-12.345"), by its
// digits alone; plain is false for any other form.
func fixedDecimal(lit string) (n int64, ok, plain bool) {
	digits, neg := strings.CutPrefix(lit, "-")
	whole, frac, _ := strings.Cut(digits, ".")
	if whole == "" || len(whole) > 10 || strings.Trim(whole, "0123456789") != "" || strings.Trim(frac, "0123456789") != "" {
		return 0, false, false
	}
	kept, rest := frac, ""
	if len(frac) > 5 {
		kept, rest = frac[:5], frac[5:]
	}
	n, err := strconv.ParseInt(whole+kept+strings.Repeat("0", 5-len(kept)), 10, 64)
	if err != nil {
		return 0, false, false
	}
	cut := strings.Trim(rest, "0") != "" // digits rounded away
	if neg {
		n = -n
		if cut {
			n-- // rounded down
		}
	}
	const limit = numberBound * numberScale
	return n, -limit <= n && (n < limit || n == limit && !cut), true
}

// exactNumber is the literal's exact value when it is a plain decimal with
// a short exponent, else the float's (hex forms, or exponents so long that
// their exact value would cost too much to compute).
func exactNumber(lit string, f float64) (*big.Rat, bool) {
	lit = strings.TrimSpace(lit)
	mant, exp, hasExp := strings.Cut(strings.ToLower(lit), "e")
	decimal := strings.Trim(mant, "+-0123456789.") == "" && (!hasExp || len(strings.TrimLeft(exp, "+-")) <= 3)
	if decimal {
		if r, ok := new(big.Rat).SetString(lit); ok {
			return r, true
		}
	}
	return new(big.Rat).SetFloat64(f), true
}

// policyNumber is a policy's number as a fixed count, or AWS's refusal
// when it is out of bounds.
func policyNumber(v *jsonValue) (int64, string) {
	n, ok := fixedNumber(v.text)
	if !ok {
		return 0, errNumberBounds
	}
	return n, ""
}

// numberLeaf is a message's (or a policy's) number as a leaf.
func numberLeaf(lit string) leaf {
	n, ok := fixedNumber(lit)
	return leaf{kind: '0', s: lit, fix: n, inBounds: ok}
}
