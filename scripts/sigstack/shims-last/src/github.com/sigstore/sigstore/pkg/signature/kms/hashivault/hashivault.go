// STAND-IN (acx sigstore stack): the HashiCorp Vault KMS signer is not in Debian's sigstore
// package; an empty package, so it is simply not registered.
package hashivault
