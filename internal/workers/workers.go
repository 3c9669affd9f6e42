// Package workers is the one rule of every --workers flag and Workers option: an integer
// in [0, Max], 0 meaning all cores. gen once allowed 0-1024 and tune 0-65536.
package workers

import "fmt"

// Max is the largest worker count any command accepts: far above the cores of any
// machine, and small enough that a typo (100000) is an error, not a million goroutines.
const Max = 1 << 10

// Want is the rule, for messages.
const Want = "an integer in [0, 1024] (0: all cores)"

// Check returns an error naming flag unless n follows the rule.
func Check(flag string, n int) error {
	if n < 0 || n > Max {
		return fmt.Errorf("%s %d: want %s", flag, n, Want)
	}
	return nil
}
