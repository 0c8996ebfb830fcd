-- Events that are never lost: an outbox written in the same transaction as each change (src/db/outbox.ts), and
-- webhooks with their deliveries and every attempt (src/modules/webhooks/, src/jobs/webhooks.ts).

-- CreateTable
CREATE TABLE "event_outbox" (
    "id" BIGSERIAL NOT NULL,
    "type" TEXT NOT NULL,
    "objectId" INTEGER NOT NULL,
    "downloadId" INTEGER NOT NULL,
    "createdAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "dispatchedAt" TIMESTAMP(3),

    CONSTRAINT "event_outbox_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "webhook" (
    "id" SERIAL NOT NULL,
    "ownerUserId" INTEGER NOT NULL DEFAULT 0,
    "ownerApiKeyId" INTEGER,
    "url" TEXT NOT NULL,
    "events" TEXT[],
    "categoryId" INTEGER,
    "downloadId" INTEGER,
    "secret" TEXT NOT NULL,
    "active" BOOLEAN NOT NULL DEFAULT true,
    "createdAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "failingSince" TIMESTAMP(3),

    CONSTRAINT "webhook_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "webhook_delivery" (
    "id" SERIAL NOT NULL,
    "webhookId" INTEGER NOT NULL,
    "eventId" BIGINT NOT NULL,
    "type" TEXT NOT NULL,
    "objectId" INTEGER NOT NULL,
    "downloadId" INTEGER NOT NULL,
    "eventAt" TIMESTAMP(3) NOT NULL,
    "status" TEXT NOT NULL DEFAULT 'pending',
    "attempts" INTEGER NOT NULL DEFAULT 0,
    "nextAttemptAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "lastStatus" INTEGER,
    "lastError" TEXT,
    "lastDurationMs" INTEGER,
    "createdAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "finishedAt" TIMESTAMP(3),

    CONSTRAINT "webhook_delivery_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "webhook_attempt" (
    "id" SERIAL NOT NULL,
    "deliveryId" INTEGER NOT NULL,
    "attemptedAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "status" INTEGER,
    "durationMs" INTEGER NOT NULL,
    "error" TEXT,

    CONSTRAINT "webhook_attempt_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE INDEX "event_outbox_dispatchedAt_id_idx" ON "event_outbox"("dispatchedAt", "id");

-- CreateIndex
CREATE INDEX "webhook_ownerUserId_idx" ON "webhook"("ownerUserId");

-- CreateIndex
CREATE INDEX "webhook_delivery_status_nextAttemptAt_idx" ON "webhook_delivery"("status", "nextAttemptAt");

-- CreateIndex
CREATE INDEX "webhook_delivery_webhookId_id_idx" ON "webhook_delivery"("webhookId", "id");

-- CreateIndex
CREATE INDEX "webhook_attempt_deliveryId_id_idx" ON "webhook_attempt"("deliveryId", "id");

-- AddForeignKey
ALTER TABLE "webhook_delivery" ADD CONSTRAINT "webhook_delivery_webhookId_fkey" FOREIGN KEY ("webhookId") REFERENCES "webhook"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "webhook_attempt" ADD CONSTRAINT "webhook_attempt_deliveryId_fkey" FOREIGN KEY ("deliveryId") REFERENCES "webhook_delivery"("id") ON DELETE CASCADE ON UPDATE CASCADE;
