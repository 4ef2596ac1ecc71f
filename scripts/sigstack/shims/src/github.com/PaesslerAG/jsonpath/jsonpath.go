// STAND-IN (acx sigstore stack): Debian packages the Intevation fork of this library, not the
// original; Fulcio only calls Get, which the fork provides unchanged.
package jsonpath

import fork "github.com/Intevation/jsonpath"

// Get evaluates a JSONPath expression against value (delegates to the fork).
func Get(path string, value interface{}) (interface{}, error) { return fork.Get(path, value) }
