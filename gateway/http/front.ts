// The gateway's listening socket. Connections whose requests are plain HTTP/1.1 calls to
// /v1 (the chat API's hot path) are parsed and answered here, on the socket, without Node's
// http machinery; a connection that sends anything else (another path, HTTP/1.0, a chunked
// or oversized body, Expect, Upgrade, a header Node would want to judge) is handed, with
// the bytes already read, to a regular http.Server for the rest of its life. Both serve
// the same handler, so behaviour does not depend on the lane; only the cost does. Measured
// in a bare proxy on this machine: 7,490 → 8,685 requests/s at 64 connections.
//
// Bounded like Node's server: request heads (16 KiB), bodies (the hot lane takes at most
// `max_body_bytes`, larger ones go to Node and are refused there), pipelined bytes waiting
// behind a response (the socket is paused), idle keep-alive connections and slow heads.
import { createServer as createHttpServer, STATUS_CODES, type IncomingHttpHeaders, type IncomingMessage, type RequestListener, type Server, type ServerResponse } from 'node:http';
import { EventEmitter } from 'node:events';
import net from 'node:net';

const HEAD_LIMIT = 16 * 1024;
const PIPELINE_LIMIT = 1024 * 1024;
const CRLF = Buffer.from('\r\n');
/** Headers Node does not join with ", " when repeated (it keeps the first, or joins cookies with "; "), and x-api-key: repeats go to Node. */
const REPEAT_TO_NODE = new Set(['content-type', 'content-length', 'user-agent', 'referer', 'host', 'authorization', 'proxy-authorization', 'if-modified-since', 'if-unmodified-since', 'from', 'location', 'max-forwards', 'retry-after', 'etag', 'last-modified', 'server', 'age', 'expires', 'cookie', 'set-cookie', 'x-api-key']);

export interface FrontOptions {
  keepAliveTimeout: number;
  headersTimeout: number;
  requestTimeout: number;
  /** Bodies up to this size are read on the hot lane. */
  max_body_bytes: number;
  /** Which request targets the hot lane serves. */
  hot: (target: string) => boolean;
}

/** A net.Server in front of an http.Server: listen, close and the connection closers of both. */
export class FrontServer extends EventEmitter {
  readonly http: Server;
  private readonly net: net.Server;
  private readonly connections = new Set<HotConnection>();
  private closing = false;

  constructor(
    private readonly options: FrontOptions,
    private readonly handler: RequestListener,
  ) {
    super();
    this.http = createHttpServer({ keepAliveTimeout: options.keepAliveTimeout, headersTimeout: options.headersTimeout, requestTimeout: options.requestTimeout }, handler);
    this.net = net.createServer({ noDelay: true }, (socket) => this.accept(socket));
    this.net.on('listening', () => {
      // Starts the http.Server's own checks of head and request timeouts for the connections it is given.
      this.http.emit('listening');
      this.emit('listening');
    });
    this.net.on('error', (error) => this.emit('error', error));
  }

  listen(port: number, host: string): this {
    this.net.listen(port, host);
    return this;
  }

  address(): ReturnType<net.Server['address']> {
    return this.net.address();
  }

  /** Stops accepting; emits 'close' once the listening socket is closed. */
  close(): this {
    this.closing = true;
    this.net.close(() => this.emit('close'));
    this.http.close(() => undefined);
    return this;
  }

  closeIdleConnections(): void {
    for (const connection of this.connections) connection.closeIfIdle();
    this.http.closeIdleConnections();
  }

  closeAllConnections(): void {
    for (const connection of this.connections) connection.destroy();
    this.http.closeAllConnections();
  }

  private accept(socket: net.Socket): void {
    if (this.closing) return void socket.destroy();
    const connection = new HotConnection(socket, this.options, this.handler, () => this.closing, (leftover) => {
      this.connections.delete(connection);
      if (leftover === null) return;
      // Node's server takes over from here, starting with the bytes already read.
      socket.pause();
      if (leftover.length > 0) socket.unshift(leftover);
      this.http.emit('connection', socket);
      process.nextTick(() => socket.resume());
    });
    this.connections.add(connection);
  }
}

let date_second = 0;
let date_header = '';
function httpDate(): string {
  const now = Date.now();
  const second = Math.floor(now / 1000);
  if (second !== date_second) {
    date_second = second;
    date_header = new Date(now).toUTCString();
  }
  return date_header;
}

/** One client connection on the hot lane, until it is closed or handed to Node. */
class HotConnection {
  private buffer: Buffer | null = null;
  /** A request whose head is read and whose body is still arriving: its parts, joined once at the end. */
  private pending: { head: ParsedHead; parts: Buffer[]; have: number } | null = null;
  private current: HotResponse | null = null;
  private timer: NodeJS.Timeout | null = null;
  /** No more requests are read on the hot lane (handed over, or closing after a response). */
  private done = false;
  /** `leave` was called. */
  private left = false;
  private readonly onData = (data: Buffer) => this.receive(data);
  private readonly onDrain = () => this.current?.emit('drain');
  private readonly onClose = () => this.closed();

  constructor(
    readonly socket: net.Socket,
    private readonly options: FrontOptions,
    private readonly handler: RequestListener,
    private readonly closing: () => boolean,
    /** Called once: with the unread bytes when Node takes over, or null when the connection ended. */
    private readonly leave: (leftover: Buffer | null) => void,
  ) {
    socket.setNoDelay(true);
    socket.on('data', this.onData);
    socket.on('drain', this.onDrain);
    socket.on('close', this.onClose);
    socket.on('error', () => undefined); // 'close' follows
    this.wait(options.headersTimeout);
  }

  closeIfIdle(): void {
    if (!this.current && !this.buffer && !this.pending) this.destroy();
  }

  destroy(): void {
    this.socket.destroy();
  }

  /** Closes the connection when no complete request arrives in `ms`. */
  private wait(ms: number): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = setTimeout(() => this.socket.destroy(), ms);
    this.timer.unref();
  }

  private closed(): void {
    if (this.timer) clearTimeout(this.timer);
    const current = this.current;
    this.current = null;
    current?.socketClosed();
    this.done = true;
    if (!this.left) {
      this.left = true;
      this.leave(null);
    }
  }

  private receive(data: Buffer): void {
    if (this.done) return; // closing after the last response: later bytes are not requests to serve
    const pending = this.pending;
    if (pending) {
      // A body in many reads is copied once, when it is whole (not once per read).
      pending.parts.push(data);
      pending.have += data.length;
      if (pending.have < pending.head.length) return;
      const all = Buffer.concat(pending.parts, pending.have);
      this.pending = null;
      this.buffer = pending.have > pending.head.length ? all.subarray(pending.head.length) : null;
      this.serve(pending.head, all.subarray(0, pending.head.length));
      if (!this.current) this.next();
      return;
    }
    this.buffer = this.buffer ? Buffer.concat([this.buffer, data]) : data;
    if (this.current) {
      // Pipelined: wait for the response in flight, without buffering without limit.
      if (this.buffer.length > PIPELINE_LIMIT) this.socket.pause();
      return;
    }
    this.next();
  }

  /** Serves the next complete request in the buffer, or hands the connection over. */
  private next(): void {
    while (this.buffer && !this.current && !this.done) {
      const buffer = this.buffer;
      const end = buffer.indexOf('\r\n\r\n');
      if (end === -1) {
        if (buffer.length > HEAD_LIMIT || hasBareLf(buffer)) return this.handOver();
        // A head begun behind a response: no timer runs since that request was served.
        if (!this.timer) this.wait(this.options.headersTimeout);
        return;
      }
      if (end + 4 > HEAD_LIMIT) return this.handOver();
      const request = parseHead(buffer.toString('latin1', 0, end), this.options);
      if (!request) return this.handOver();
      const body_end = end + 4 + request.length;
      if (buffer.length < body_end) {
        this.pending = { head: request, parts: [buffer.subarray(end + 4)], have: buffer.length - (end + 4) };
        this.buffer = null;
        // From the end of the head, not restarted by each piece of the body.
        this.wait(this.options.requestTimeout);
        return;
      }
      const body = buffer.subarray(end + 4, body_end);
      this.buffer = buffer.length > body_end ? buffer.subarray(body_end) : null;
      this.serve(request, body);
    }
    if (!this.current && !this.done) this.wait(this.buffer ? this.options.headersTimeout : this.options.keepAliveTimeout);
  }

  private handOver(): void {
    if (this.timer) clearTimeout(this.timer);
    this.done = true;
    this.left = true;
    this.socket.off('data', this.onData);
    this.socket.off('drain', this.onDrain);
    this.socket.off('close', this.onClose);
    const leftover = this.buffer ?? Buffer.alloc(0);
    this.buffer = null;
    this.leave(leftover);
  }

  private serve(head: ParsedHead, body: Buffer): void {
    if (this.timer) {
      clearTimeout(this.timer);
      this.timer = null;
    }
    const req = new HotRequest(head, body, this.socket);
    const res = new HotResponse(this.socket, head.method === 'HEAD', head.keep_alive, () => this.finished(res));
    this.current = res;
    try {
      this.handler(req as unknown as IncomingMessage, res as unknown as ServerResponse);
    } catch {
      this.socket.destroy();
    }
  }

  private finished(res: HotResponse): void {
    if (this.current !== res) return;
    this.current = null;
    if (!res.keep_alive || this.closing()) {
      this.done = true;
      this.buffer = null;
      // As Node's server (destroySoon): closed once the response is flushed, not left half-open for the client to close.
      this.socket.end(() => this.socket.destroy());
      return;
    }
    if (this.socket.isPaused()) this.socket.resume();
    this.next();
  }
}

interface ParsedHead {
  method: string;
  url: string;
  headers: IncomingHttpHeaders;
  raw_headers: string[];
  length: number;
  keep_alive: boolean;
}

/** Parses a request head the hot lane serves; null for anything Node should judge. */
function parseHead(head: string, options: FrontOptions): ParsedHead | null {
  const line_end = head.indexOf('\r\n');
  const request_line = line_end === -1 ? head : head.slice(0, line_end);
  const first = request_line.indexOf(' ');
  const second = request_line.indexOf(' ', first + 1);
  if (first === -1 || second === -1) return null;
  const method = request_line.slice(0, first);
  const url = request_line.slice(first + 1, second);
  if (request_line.slice(second + 1) !== 'HTTP/1.1') return null;
  if (method !== 'POST' && method !== 'GET' && method !== 'HEAD') return null;
  if (!options.hot(url) || /[\s\x00-\x1f\x7f]/.test(url)) return null;
  const headers: IncomingHttpHeaders = {};
  const raw_headers: string[] = [];
  let length = 0;
  let keep_alive = true;
  if (line_end !== -1) {
    for (const line of head.slice(line_end + 2).split('\r\n')) {
      const colon = line.indexOf(':');
      if (colon <= 0) return null;
      const raw_name = line.slice(0, colon);
      const name = raw_name.toLowerCase();
      if (!/^[!#$%&'*+.^_`|~0-9a-z-]+$/.test(name)) return null;
      const value = trimOws(line, colon + 1);
      if (/[\x00-\x08\x0a-\x1f\x7f]/.test(value)) return null;
      if (name === 'transfer-encoding' || name === 'expect' || name === 'upgrade' || name === 'http2-settings') return null;
      if (headers[name] !== undefined) {
        // Repeats of these need Node's rules (and its 400s); others join as Node joins them.
        if (REPEAT_TO_NODE.has(name)) return null;
        headers[name] = `${headers[name] as string}, ${value}`;
      } else headers[name] = value;
      raw_headers.push(raw_name, value);
      if (name === 'content-length') {
        if (!/^\d{1,15}$/.test(value)) return null;
        length = Number(value);
        if (length > options.max_body_bytes) return null;
      } else if (name === 'connection') {
        const tokens = value.toLowerCase();
        if (tokens.includes('close')) keep_alive = false;
        if (tokens.includes('upgrade')) return null;
      }
    }
  }
  if (headers.host === undefined) return null;
  return { method, url, headers, raw_headers, length, keep_alive };
}

/** A LF not preceded by CR: a head the hot lane does not read, which Node refuses at once. */
function hasBareLf(buffer: Buffer): boolean {
  for (let lf = buffer.indexOf(10); lf !== -1; lf = buffer.indexOf(10, lf + 1)) if (lf === 0 || buffer[lf - 1] !== 13) return true;
  return false;
}

/** Head, body and tail in one string, or in one Buffer when the body is a Buffer (its bytes are written as they are). */
function join(head: string, body: string | Buffer, tail = ''): string | Buffer {
  if (typeof body === 'string') return head + body + tail;
  return Buffer.concat([Buffer.from(head), body, Buffer.from(tail)]);
}

/** `line` from `start`, without leading and trailing spaces and tabs (Node trims only these). */
function trimOws(line: string, start: number): string {
  let end = line.length;
  while (start < end && (line.charCodeAt(start) === 32 || line.charCodeAt(start) === 9)) start++;
  while (end > start && (line.charCodeAt(end - 1) === 32 || line.charCodeAt(end - 1) === 9)) end--;
  return line.slice(start, end);
}

/** The request as the handler sees it: the parts of IncomingMessage the /v1 routes use. */
class HotRequest extends EventEmitter {
  readonly method: string;
  readonly url: string;
  readonly headers: IncomingHttpHeaders;
  readonly rawHeaders: string[];
  readonly httpVersion = '1.1';
  /** The whole body, already read: readers take it from here instead of 'data' events. */
  readonly preread_body: Buffer;

  constructor(
    head: ParsedHead,
    body: Buffer,
    readonly socket: net.Socket,
  ) {
    super();
    this.method = head.method;
    this.url = head.url;
    this.headers = head.headers;
    this.rawHeaders = head.raw_headers;
    this.preread_body = body;
    // A reader that listens for the body as a stream gets it as one 'data' and an 'end',
    // on the next tick after it starts listening.
    const onListener = (event: string | symbol) => {
      if (event !== 'data' && event !== 'end') return;
      this.off('newListener', onListener);
      process.nextTick(() => {
        if (body.length > 0) this.emit('data', body);
        this.emit('end');
      });
    };
    this.on('newListener', onListener);
  }

  resume(): this {
    return this;
  }
}

/** The response: the parts of ServerResponse the /v1 routes use, framed straight onto the socket. */
class HotResponse extends EventEmitter {
  statusCode = 200;
  headersSent = false;
  writableEnded = false;
  writableFinished = false;
  destroyed = false;
  private readonly headers = new Map<string, [string, string | number | readonly string[]]>();
  private chunked = false;
  private closed_emitted = false;

  constructor(
    private readonly socket: net.Socket,
    private readonly head_only: boolean,
    public keep_alive: boolean,
    private readonly onFinished: () => void,
  ) {
    super();
  }

  setHeader(name: string, value: string | number | readonly string[]): this {
    // As Node's ServerResponse: a header cannot smuggle a line break into the response head.
    for (const item of Array.isArray(value) ? value : [value]) {
      if (/[\r\n]/.test(String(item)) || /[\r\n:]/.test(name)) throw new TypeError(`invalid character in header ${JSON.stringify(name)}`);
    }
    this.headers.set(name.toLowerCase(), [name, value]);
    return this;
  }

  getHeader(name: string): string | number | readonly string[] | undefined {
    return this.headers.get(name.toLowerCase())?.[1];
  }

  removeHeader(name: string): void {
    this.headers.delete(name.toLowerCase());
  }

  writeHead(status: number, headers?: Record<string, string | number | readonly string[]>): this {
    this.statusCode = status;
    if (headers) for (const [name, value] of Object.entries(headers)) this.setHeader(name, value);
    return this;
  }

  /** The status line and headers; marks them sent. */
  private renderHead(): string {
    this.headersSent = true;
    const status = this.statusCode;
    let text = `HTTP/1.1 ${status} ${STATUS_CODES[status] ?? 'Unknown'}\r\n`;
    let has_length = false;
    for (const [lower, [name, value]] of this.headers) {
      if (lower === 'connection') {
        if (String(value).toLowerCase().includes('close')) this.keep_alive = false;
        continue;
      }
      if (lower === 'content-length') has_length = true;
      if (Array.isArray(value)) for (const item of value) text += `${name}: ${item}\r\n`;
      else text += `${name}: ${String(value)}\r\n`;
    }
    const bodyless = this.head_only || status === 204 || status === 304;
    if (!has_length && !bodyless) {
      this.chunked = true;
      text += 'transfer-encoding: chunked\r\n';
    }
    text += `date: ${httpDate()}\r\n`;
    text += this.keep_alive ? `connection: keep-alive\r\n\r\n` : 'connection: close\r\n\r\n';
    return text;
  }

  cork(): void {
    this.socket.cork();
  }

  uncork(): void {
    this.socket.uncork();
  }

  flushHeaders(): void {
    if (this.headersSent || this.destroyed) return;
    this.socket.write(this.renderHead());
  }

  write(chunk: string | Buffer): boolean {
    if (this.writableEnded || this.destroyed) return false;
    const head = this.headersSent ? '' : this.renderHead();
    return this.socket.write(join(head, this.frame(chunk)));
  }

  end(chunk?: string | Buffer): this {
    if (this.writableEnded) return this;
    this.writableEnded = true;
    if (!this.destroyed) {
      const head = this.headersSent ? '' : this.renderHead();
      const body = chunk === undefined || chunk.length === 0 ? '' : this.frame(chunk);
      const tail = this.chunked && !this.head_only ? '0\r\n\r\n' : '';
      const text = join(head, body, tail);
      if (text.length > 0) this.socket.write(text);
    }
    this.writableFinished = !this.destroyed;
    process.nextTick(() => {
      if (this.writableFinished) this.emit('finish');
      this.emitClose();
      this.onFinished();
    });
    return this;
  }

  private frame(chunk: string | Buffer): string | Buffer {
    if (this.head_only) return '';
    if (!this.chunked) return chunk;
    if (chunk.length === 0) return '';
    if (typeof chunk === 'string') return `${Buffer.byteLength(chunk).toString(16)}\r\n${chunk}\r\n`;
    return Buffer.concat([Buffer.from(`${chunk.length.toString(16)}\r\n`), chunk, CRLF]);
  }

  /** The client went away before the response was complete. */
  socketClosed(): void {
    if (this.writableFinished) return;
    this.destroyed = true;
    this.emitClose();
  }

  private emitClose(): void {
    if (this.closed_emitted) return;
    this.closed_emitted = true;
    this.emit('close');
  }
}
