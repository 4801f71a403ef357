package session

// Precheck is precheck, for tests.
var Precheck = precheck
