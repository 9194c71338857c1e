package admin

// ParsePrometheus lets the tests of a whole server check its /metrics.
var ParsePrometheus = parsePrometheus
