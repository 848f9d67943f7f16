// A Node client of Freki and Geri built from protos/ alone (no generated code, no Python): it indexes a
// document, retrieves, asks Geri for a grounded answer with that context, asks an off-topic question, and
// follows up in the session (RewriteQuery -> RetrieveContext -> AnswerStream: text deltas, then the checked
// answer).
//
// Usage: node grounded_exchange.mjs --freki HOST:PORT --geri HOST:PORT
// Prints one JSON object with every reply, field names as in the .proto files; exits 1 with the gRPC
// status on stderr when a call fails. tests/polyglot/test_node_client.py asserts on the output.
import path from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";

import * as grpc from "@grpc/grpc-js";
import * as protoLoader from "@grpc/proto-loader";

const PROTOS = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../../../protos");
const DEADLINE_MS = 300_000;

const DOCUMENT = {
  document_id: "hrafn-relay",
  source: "hrafn-relay.md",
  content: [
    "# Hrafn Relay",
    "",
    "The Hrafn Relay admin API listens on TCP port 9427.",
    "The relay writes its logs to syslog under the tag hrafn.",
    "Operators restart the relay with the command hrafnctl restart.",
  ].join("\n"),
};
const QUESTION = "Which port does the Hrafn Relay admin API listen on?";
const OFF_TOPIC = "What is the capital of Peru?";
const FOLLOW_UP = "Where does it write its logs?";
const SESSION = "node-polyglot-session";

function loadServices() {
  const definition = protoLoader.loadSync(["wolf/v1/freki.proto", "wolf/v1/geri.proto"], {
    includeDirs: [PROTOS],
    keepCase: true, // field names as written in the .proto files
    longs: String,
    enums: String,
    defaults: true,
    oneofs: true,
  });
  return grpc.loadPackageDefinition(definition).wolf.v1;
}

function deadline() {
  return { deadline: Date.now() + DEADLINE_MS };
}

function unary(client, method, request) {
  return new Promise((resolve, reject) => {
    client[method](request, deadline(), (error, reply) => {
      if (error) {
        reject(new Error(`${method} failed: ${grpc.status[error.code]} ${error.details}`));
      } else {
        resolve(reply);
      }
    });
  });
}

function serverStream(client, method, request) {
  return new Promise((resolve, reject) => {
    const events = [];
    const call = client[method](request, deadline());
    call.on("data", (event) => events.push(event));
    call.on("error", (error) => reject(new Error(`${method} failed: ${grpc.status[error.code]} ${error.details}`)));
    call.on("end", () => resolve(events));
  });
}

async function retrieve(freki, prompt) {
  const reply = await unary(freki, "RetrieveContext", {
    request_id: "node-retrieve", model_type: "RAG", prompt, retrieval: { top_k: 3 },
  });
  return reply.rag_context;
}

// A grounded-answer request: the question, the context Freki returned, greedy decoding.
function answerRequest(prompt, context, sessionId = "") {
  return {
    request: {
      request_id: "node-answer", model_type: "LLM", prompt, context,
      metadata: { session_id: sessionId, owner_id: sessionId ? "node-user" : "", temperature: 0 },
    },
  };
}

async function main() {
  const { values } = parseArgs({ options: { freki: { type: "string" }, geri: { type: "string" } } });
  if (!values.freki || !values.geri) {
    throw new Error("usage: node grounded_exchange.mjs --freki HOST:PORT --geri HOST:PORT");
  }
  const wolf = loadServices();
  const insecure = grpc.credentials.createInsecure();
  const freki = new wolf.FrekiService(values.freki, insecure);
  const geri = new wolf.GeriService(values.geri, insecure);
  const out = { document: DOCUMENT, question: QUESTION, off_topic_question: OFF_TOPIC, follow_up_question: FOLLOW_UP };

  out.indexed = await unary(freki, "IndexDocument", { request_id: "node-index", ...DOCUMENT });
  out.context = await retrieve(freki, QUESTION);
  out.answer = await unary(geri, "Answer", answerRequest(QUESTION, out.context, SESSION));

  out.off_topic_context = await retrieve(freki, OFF_TOPIC);
  out.off_topic = await unary(geri, "Answer", answerRequest(OFF_TOPIC, out.off_topic_context));

  out.rewrite = await unary(geri, "RewriteQuery", {
    request: { request_id: "node-rewrite", model_type: "LLM", prompt: FOLLOW_UP, metadata: { session_id: SESSION } },
  });
  out.follow_up_context = await retrieve(freki, out.rewrite.query);
  out.follow_up_stream = await serverStream(geri, "AnswerStream", answerRequest(FOLLOW_UP, out.follow_up_context, SESSION));
  out.session = await unary(geri, "GetSession", { request_id: "node-session", session_id: SESSION });

  freki.close();
  geri.close();
  process.stdout.write(JSON.stringify(out, null, 1) + "\n");
}

main().catch((error) => {
  process.stderr.write(`${error.message}\n`);
  process.exit(1);
});
