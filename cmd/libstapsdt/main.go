package main

// main is required of a c-shared build's main package and never runs.
func main() {}
