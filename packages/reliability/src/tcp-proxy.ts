// The proxy moved into the kit, whose leaderLease suite cuts a leader's network with it.
export { startTcpProxy, type TcpProxy } from '@pglock/test-kit';
