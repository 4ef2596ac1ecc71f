// STAND-IN (acx sigstore stack): the Azure KMS signer is not in Debian's sigstore package;
// an empty package, so it is simply not registered.
package azure
