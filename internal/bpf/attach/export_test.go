package attach

// Precheck is precheck, for tests.
var Precheck = precheck
