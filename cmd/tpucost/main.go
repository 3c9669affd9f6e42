// Command tpucost is the command line of the tpucost toolkit; see the README, docs/ and
// `tpucost help`.
package main

import (
	"os"

	"github.com/tpucost/tpucost/cmd/tpucost/cli"
)

func main() { os.Exit(cli.Main(os.Args[1:], os.Stdin, os.Stdout, os.Stderr)) }
