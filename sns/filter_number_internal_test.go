package sns

import (
	"fmt"
	"math/big"
	"math/rand/v2"
	"testing"
)

// slowFixed is fixedNumber's exact path alone.
func slowFixed(lit string) (int64, bool) {
	r, ok := new(big.Rat).SetString(lit)
	if !ok || r.Cmp(big.NewRat(-numberBound, 1)) < 0 || r.Cmp(big.NewRat(numberBound, 1)) > 0 {
		return 0, false
	}
	r.Mul(r, big.NewRat(numberScale, 1))
	return new(big.Int).Div(r.Num(), r.Denom()).Int64(), true
}

// TestFixedDecimalMatchesExact: the digit-by-digit reading of plain
// decimals gives what exact arithmetic gives, at the bounds and at random.
func TestFixedDecimalMatchesExact(t *testing.T) {
	t.Parallel()
	lits := []string{"0", "-0", "1", "-1", "0.000001", "-0.000001", "-0.00001", "100.123456789", "1000000000",
		"1000000000.00000", "1000000000.000001", "-1000000000", "-1000000000.000001", "9999999999", "-9999999999.99999",
		"0.3", "12.", "007.5"}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 2000 {
		lits = append(lits, fmt.Sprintf("%d.%0*d", rng.Int64N(4_000_000_000)-2_000_000_000, 1+rng.IntN(9), rng.Int64N(1_000_000_000)))
	}
	for _, lit := range lits {
		n, ok, plain := fixedDecimal(lit)
		if !plain {
			t.Errorf("fixedDecimal(%q) is not plain", lit)
			continue
		}
		wn, wok := slowFixed(lit)
		if ok != wok || (ok && n != wn) {
			t.Errorf("fixedDecimal(%q) = %d, %v; exact: %d, %v", lit, n, ok, wn, wok)
		}
	}
	for _, lit := range []string{"1e3", "-1.5E-2", "0x10", "", "-", ".5", "1.2.3"} {
		if _, _, plain := fixedDecimal(lit); plain {
			t.Errorf("fixedDecimal(%q) takes a form it should leave to the exact path", lit)
		}
	}
}
