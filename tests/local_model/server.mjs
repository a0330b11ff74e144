// A small OpenAI-compatible chat server over a local GGUF model (node-llama-cpp), for milo's
// end-to-end LLM tests and for trying `milo evolve --agents` offline.
//
//   node server.mjs [MODEL.gguf] [PORT]
//
// MODEL.gguf defaults to $MILO_TEST_GGUF, PORT to 0 (a free port). The server binds 127.0.0.1 only,
// evaluates on one CPU thread (more hung on a 2-core machine), and prints
// `listening on 127.0.0.1:PORT` on stdout once the model is loaded.
//
// Routes: GET /v1/models and POST /v1/chat/completions (OpenAI shape; `max_tokens` or
// `max_completion_tokens`, `temperature` (0 or absent: greedy) and `seed` honoured). Requests are
// answered one at a time, each from a fresh chat history (the evaluated prefix it shares with the
// previous request is reused). A malformed request, or one whose prompt
// plus `max_tokens` exceeds the context (4096 tokens), gets a JSON 400.
import http from "node:http";
import path from "node:path";
import { getLlama, LlamaChat, LlamaLogLevel } from "node-llama-cpp";

const MAX_BODY_BYTES = 4 * 1024 * 1024;
const CONTEXT_SIZE = 4096;
const DEFAULT_MAX_TOKENS = 256;

const modelPath = process.argv[2] ?? process.env.MILO_TEST_GGUF;
const portText = process.argv[3] ?? "0";
if (!modelPath) {
    fail("usage: node server.mjs MODEL.gguf [PORT] (or set MILO_TEST_GGUF)");
}
const port = Number(portText);
if (!Number.isInteger(port) || port < 0 || port > 65535) {
    fail(`port must be an integer in 0..65535, got ${JSON.stringify(portText)}`);
}
const modelId = path.basename(modelPath).replace(/\.gguf$/i, "");

function fail(message) {
    process.stderr.write(`server.mjs: ${message}\n`);
    process.exit(2);
}

/** A request error answered with `status` and an OpenAI-shaped error body. */
class RequestError extends Error {
    constructor(status, message) {
        super(message);
        this.status = status;
    }
}

let llama, model, context, sequence, chat;
try {
    llama = await getLlama({
        gpu: false,
        build: "never",
        maxThreads: 1,
        logLevel: LlamaLogLevel.error,
    });
    model = await llama.loadModel({ modelPath, gpuLayers: 0 });
    context = await model.createContext({ contextSize: CONTEXT_SIZE, sequences: 1, threads: 1 });
    sequence = context.getSequence();
    chat = new LlamaChat({ contextSequence: sequence });
} catch (error) {
    fail(`cannot load ${modelPath}: ${error.message}`);
}

/** Requests run one after another on the single context sequence. */
let queue = Promise.resolve();
function enqueue(job) {
    const run = queue.then(job);
    queue = run.catch(() => {});
    return run;
}

/** The request body's text, refused past MAX_BODY_BYTES. */
function readBody(req) {
    return new Promise((resolve, reject) => {
        const chunks = [];
        let size = 0;
        req.on("data", (chunk) => {
            size += chunk.length;
            if (size > MAX_BODY_BYTES) {
                reject(new RequestError(413, `request body is over ${MAX_BODY_BYTES} bytes`));
                req.destroy();
                return;
            }
            chunks.push(chunk);
        });
        req.on("end", () => resolve(Buffer.concat(chunks).toString("utf8")));
        req.on("error", reject);
    });
}

/** A message's text: a string, or the text parts of an OpenAI content array. */
function messageText(content, index) {
    if (typeof content === "string") return content;
    if (Array.isArray(content)) {
        const parts = content.map((part) => {
            if (part && part.type === "text" && typeof part.text === "string") return part.text;
            throw new RequestError(400, `messages[${index}].content: only text parts are supported`);
        });
        return parts.join("");
    }
    throw new RequestError(400, `messages[${index}].content must be a string or an array of text parts`);
}

/** The OpenAI request checked and turned into a chat history and generation options. */
function parseChatRequest(text) {
    let body;
    try {
        body = JSON.parse(text);
    } catch (error) {
        throw new RequestError(400, `request body is not JSON: ${error.message}`);
    }
    if (body === null || typeof body !== "object" || Array.isArray(body)) {
        throw new RequestError(400, "request body must be a JSON object");
    }
    if (!Array.isArray(body.messages) || body.messages.length === 0) {
        throw new RequestError(400, "messages must be a non-empty array");
    }
    const history = body.messages.map((message, index) => {
        if (message === null || typeof message !== "object") {
            throw new RequestError(400, `messages[${index}] must be an object`);
        }
        const content = messageText(message.content, index);
        switch (message.role) {
            case "system":
            case "developer":
                return { type: "system", text: content };
            case "user":
                return { type: "user", text: content };
            case "assistant":
                return { type: "model", response: [content] };
            default:
                throw new RequestError(400, `messages[${index}].role ${JSON.stringify(message.role)} is not system, user or assistant`);
        }
    });
    const maxTokens = body.max_completion_tokens ?? body.max_tokens ?? DEFAULT_MAX_TOKENS;
    if (!Number.isInteger(maxTokens) || maxTokens < 1) {
        throw new RequestError(400, `max_tokens must be a positive integer, got ${JSON.stringify(maxTokens)}`);
    }
    const temperature = body.temperature ?? 0;
    if (typeof temperature !== "number" || !(temperature >= 0 && temperature <= 2)) {
        throw new RequestError(400, `temperature must be a number in [0, 2], got ${JSON.stringify(temperature)}`);
    }
    const seed = body.seed;
    if (seed !== undefined && seed !== null && !Number.isSafeInteger(seed)) {
        throw new RequestError(400, `seed must be an integer, got ${JSON.stringify(seed)}`);
    }
    if (body.stream === true) {
        throw new RequestError(400, "stream = true is not supported");
    }
    return { history, maxTokens, temperature, seed: seed ?? undefined };
}

/** One completion from a fresh chat history. The context sequence keeps the tokens of the last
 * request, so a prompt sharing a prefix with it (the same system message, a conversation that
 * grew by one turn) evaluates only what differs. Usage counts the whole prompt, as OpenAI does,
 * and the tokens generated. */
async function complete({ history, maxTokens, temperature, seed }) {
    const chatHistory = [...history, { type: "model", response: [] }];
    const prompt = chat.chatWrapper.generateContextState({ chatHistory }).contextText;
    const promptTokens = prompt.tokenize(model.tokenizer).length;
    if (promptTokens + maxTokens > CONTEXT_SIZE) {
        throw new RequestError(
            400,
            `context_length_exceeded: the prompt's ${promptTokens} tokens plus max_tokens ${maxTokens} exceed the context of ${CONTEXT_SIZE} tokens`,
        );
    }
    const before = sequence.tokenMeter.getState();
    const result = await chat.generateResponse(chatHistory, {
        maxTokens,
        temperature,
        seed,
    });
    const used = sequence.tokenMeter.diff(before);
    return {
        id: `chatcmpl-${Date.now().toString(36)}`,
        object: "chat.completion",
        created: Math.floor(Date.now() / 1000),
        model: modelId,
        choices: [
            {
                index: 0,
                message: { role: "assistant", content: result.response },
                finish_reason: result.metadata.stopReason === "maxTokens" ? "length" : "stop",
            },
        ],
        usage: {
            prompt_tokens: promptTokens,
            completion_tokens: used.usedOutputTokens,
            total_tokens: promptTokens + used.usedOutputTokens,
        },
    };
}

function send(res, status, body) {
    const text = JSON.stringify(body);
    res.writeHead(status, { "content-type": "application/json", "content-length": Buffer.byteLength(text) });
    res.end(text);
}

function sendError(res, status, message) {
    send(res, status, { error: { message, type: status < 500 ? "invalid_request_error" : "server_error" } });
}

const server = http.createServer(async (req, res) => {
    try {
        const url = new URL(req.url, "http://127.0.0.1");
        if (url.pathname === "/v1/models" && req.method === "GET") {
            send(res, 200, { object: "list", data: [{ id: modelId, object: "model", owned_by: "local" }] });
        } else if (url.pathname === "/v1/chat/completions" && req.method === "POST") {
            const request = parseChatRequest(await readBody(req));
            send(res, 200, await enqueue(() => complete(request)));
        } else {
            sendError(res, 404, `no route ${req.method} ${url.pathname}`);
        }
    } catch (error) {
        if (error instanceof RequestError) sendError(res, error.status, error.message);
        else sendError(res, 500, `generation failed: ${error.message}`);
    }
});

server.listen(port, "127.0.0.1", () => {
    process.stdout.write(`listening on 127.0.0.1:${server.address().port}\n`);
});
for (const signal of ["SIGTERM", "SIGINT"]) {
    process.on(signal, () => process.exit(0));
}
