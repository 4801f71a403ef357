package gen_test

import (
	"fmt"
	"strings"

	"github.com/usdtkit/usdtkit/dynsdt/gen"
)

func ExampleParseD() {
	const d = `
#define Oid unsigned int
provider myapp {
	probe request__start(const char *path, int n);
	probe cache__miss(Oid, struct entry *);
};`
	provs, err := gen.ParseD(strings.NewReader(d), "myapp.d")
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, p := range provs {
		for _, pr := range p.Probes {
			fmt.Println(p.Name, pr.Name, pr.Args)
		}
	}
	_, err = gen.ParseD(strings.NewReader("provider myapp {\n\tprobe x(double);\n};"), "bad.d")
	fmt.Println(err)
	// Output:
	// myapp request__start [string int32]
	// myapp cache__miss [uint32 pointer]
	// bad.d:2:10: argument 0 of probe x: floating-point arguments are not supported (double)
}
