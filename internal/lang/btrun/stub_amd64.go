package btrun

// fire is the function BEGIN, END and interval blocks are attached to.
func fire(token uint64)

// fireAddr returns fire's entry address.
func fireAddr() uintptr
