package btgen

// CallerKernel is callerKernel, for tests.
var CallerKernel = callerKernel
